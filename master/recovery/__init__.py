"""The eviction-recovery strategies on the running master: ``spark``, ``spark-checkpoint``, ``pado``.

The pure decisions live in ``master/recovery/lineage.py``, the Pado compiler in
``master/recovery/pado_compiler.py`` and Pado's runtime rules in ``pado_rules.py``;
``spark.py`` and ``pado.py`` here map them onto the physical plans of our
workloads (``testbed/workloads/*.plan``) and turn the core's events into
decisions the core applies: each is a ``testbed.api.Strategy``, with two
queries (``plan``, ``launch``) and one handler per event (job submitted, task
started, task succeeded, block reported, push reported, tick, reconnected, node
lost); see docs/strategies.md, section 6. They are registered in
``testbed/registry.py`` and built by ``master.policy_setup.make_strategy``, as a plugin is.
"""
