"""Workflows as dataflow DAGs (Musketeer, Gog's dissertation ch. 3-4): an operator IR
(``ir``), its lowering onto a job's stage DAG with Musketeer's merging rules (``lowering``),
the task code running a fused stage's operator chain (``operators``), a SQL front-end
(``sql``) and the TPC-H queries with DuckDB as their reference (``tpch``, ``reference``)."""
