"""Workloads: how a job becomes stages of tasks (planning) and what each task computes.

Each built-in workload is a package ``testbed/workloads/<name>/``, registered by one line in
``testbed/registry.py``; a plugin workload runs through ``user``. A built-in's package is its
description (``description.BuiltinWorkload``): ``plan(job, seed, scenario)``, ``OPERATIONS`` (its
ops' task functions), ``COMBINERS`` (ops whose outputs may be aggregated on their node before a
push), ``PROFILED_STAGES`` (what ``testbed profile`` measures; empty: not profiled),
``lineage`` (its logical DAG), ``RECORD_BYTES`` (the simulator's record), ``check`` and
``generate``. ``testbed.workloads.catalog`` gathers them: ``plan_job`` is called by the master;
``OPERATIONS`` maps every task's ``op`` name to the function an agent's worker runs;
``builtin(name)`` is the description the recovery strategies, the simulator and the CLI read.
This ``__init__`` imports nothing, so a module that imports one pure description
(``progress``, ``task_model``) loads no task code.
"""
