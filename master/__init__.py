"""The master: node registry, jobs -> stages -> tasks, policies, chaos and the run journal."""
