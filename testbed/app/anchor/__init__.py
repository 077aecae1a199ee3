"""The external anchor: the built-in workloads run on Apache Spark (``local-cluster``), under the
same evictions as ours, for docs/fidelity.md ("Against Apache Spark")."""
