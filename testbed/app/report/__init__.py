"""Reports over recorded run directories: ``testbed report`` and ``testbed compare``.

- ``testbed.app.report.rundir.load_run`` reads a run directory, tolerating missing
  optional files and crashed runs (no ``summary.json``);
- ``testbed.app.report.metrics.compute_metrics`` derives every number a report shows;
- ``testbed.app.report.build.write_report`` writes ``report.md``, a self-contained
  ``report.html`` and ``plots/*.png`` (and ``*.svg``) into the run directory;
- ``testbed.app.report.compare.compare_runs`` puts several runs side by side.

Only the light pieces are imported here, so that the CLI does not pay for
matplotlib unless it makes a report.
"""

from testbed.app.report.cli import add_report_commands
from testbed.app.report.errors import UsageError

__all__ = ["UsageError", "add_report_commands"]
