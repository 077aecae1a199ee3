"""The workflow builder of the plugin API (``testbed.workflows.builder``): tables, the IR's
operators as methods, row UDFs and WHILE; a ``workload: sql`` job names a builder function
(``builder: module:function``) that returns a ``Flow``. Imported on its own (``from
testbed.api.workflows import table``), so that ``testbed.api`` stays free of sqlglot."""

from testbed.workflows.builder import Flow, table
from testbed.workflows.lowering import Workflow

__all__ = ["Flow", "Workflow", "table"]
