"""The live view of a run in the browser (docs/live-view.md): one page, fed the run's journal
events as server-sent events, by the master's HTTP API while a run goes (``feed``) and by
``testbed ui RUN_DIR`` for a run that ended (``replay``)."""
