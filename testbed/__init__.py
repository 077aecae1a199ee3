"""transient-testbed: data processing on eviction-prone resources, emulated for real on one machine."""

__version__ = "0.1.0"
