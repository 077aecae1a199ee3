"""Scheduling, placement and autoscaling policies: pure decisions over cluster snapshots."""
