"""Every shipped scenario runs as its header says: ``testbed validate`` (every check ``testbed
run`` makes before anything starts, the chaos plan's limits among them) accepts it as each
``testbed run`` or ``testbed validate`` line of its header gives it, and its eviction plan to
its horizon is made (``testbed chaos plan``). The CLI runs in-process."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
import yaml

from testbed.app.cli import main
from tests.support.cgroups import require_cgroups

SCENARIOS = Path(__file__).resolve().parents[1] / "scenarios"
SHIPPED = sorted([*SCENARIOS.glob("*.yaml"), *(SCENARIOS / "papers").glob("*.yaml")])
COMMAND = re.compile(r"#\s*testbed (?:run|validate) (\S+\.yaml)(.*)")
KEPT = {"--set": 1, "--backend": 1}
"""The options of a header's command that ``validate`` takes too, and their values' count."""


def header_commands(path: Path) -> list[list[str]]:
    """The options of each ``testbed run``/``validate`` line of the file's header that names it
    (a trailing ``# comment`` left out), each once, the bare command first."""
    commands: dict[tuple[str, ...], None] = {(): None}
    for line in path.read_text().splitlines():
        if not line.startswith("#"):
            break
        match = COMMAND.match(line)
        if match and Path(match.group(1)).name == path.name:
            commands[tuple(_kept(shlex.split(match.group(2), comments=True)))] = None
    return [list(options) for options in commands]


def _kept(words: list[str]) -> list[str]:
    kept: list[str] = []
    for index, word in enumerate(words):
        if word in KEPT:
            kept += words[index : index + 1 + KEPT[word]]
    return kept


def _name(path: Path) -> str:
    return str(path.relative_to(SCENARIOS))


@pytest.fixture
def isolation(request: pytest.FixtureRequest) -> None:
    """A faithful scenario needs cgroups to run locally (and so to validate): without, skip."""
    path: Path = request.node.callspec.params["path"]
    fields = yaml.safe_load(path.read_text())
    faithful = (fields.get("fidelity") or {}).get("mode") == "faithful"
    if faithful and fields.get("backend", "local") == "local":
        require_cgroups(_name(path))


def test_the_headers_commands_are_found() -> None:
    commands = header_commands(SCENARIOS / "cloudcoaster.yaml")
    assert ["--set", "policy.autoscaler=static"] in commands
    assert ["--set", "seed=2"] in commands


@pytest.mark.e2e  # planning a paper's chaos to its horizon takes seconds (sim-10k: 33,000 evictions)
@pytest.mark.parametrize("path", SHIPPED, ids=_name)
def test_a_shipped_scenario_validates_as_its_header_runs_it(
    path: Path, isolation: None, capsys: pytest.CaptureFixture[str]
) -> None:
    for options in header_commands(path):
        assert main(["validate", str(path), *options]) == 0, (options, capsys.readouterr().err)


@pytest.mark.e2e
@pytest.mark.parametrize("path", SHIPPED, ids=_name)
def test_a_shipped_scenario_is_planned_to_its_horizon(path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["chaos", "plan", str(path)]) == 0, capsys.readouterr().err
    assert " evictions: " in capsys.readouterr().out.splitlines()[-1]


def test_validate_refuses_what_run_refuses_a_chaos_plan_over_the_limit(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``validate`` said ok to a scenario ``run`` refused: both now give the same one line.
    (The limit is lowered so that the plan is small: the check is the same.)"""
    monkeypatch.setattr("master.chaos.plan.MAX_PLANNED_EVICTIONS", 100)
    path = tmp_path / "busy.yaml"
    busy = {"name": "busy", "cluster": {"reserved": 1, "transient": 1}, "jobs": [{"workload": "sleep"}]}
    busy |= {"chaos": {"transient": {"lifetime": {"fixed": "10s"}}}, "timeout": "1h"}
    path.write_text(yaml.safe_dump(busy))
    errors = []
    for command in (["validate", str(path)], ["run", str(path), "--out", str(tmp_path / "run")]):
        assert main(command) == 2
        errors.append(capsys.readouterr().err)
    assert errors[0] == errors[1] and len(errors[0].strip().splitlines()) == 1, errors
    assert errors[0].startswith(f"{path}: chaos: more than 100 evictions are planned before"), errors
    assert not (tmp_path / "run").exists()


def test_validate_reports_every_error_in_one_pass(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """An unknown scheduler, strategy and autoscaler and a chaos plan over the limit: four
    lines at once (validate stopped at the scheduler, then at the next one fixed)."""
    monkeypatch.setattr("master.chaos.plan.MAX_PLANNED_EVICTIONS", 100)
    path = tmp_path / "wrong.yaml"
    wrong = {"name": "wrong", "cluster": {"reserved": 1, "transient": 1}, "jobs": [{"workload": "sleep"}]}
    wrong |= {"chaos": {"transient": {"lifetime": {"fixed": "10s"}}}, "timeout": "1h"}
    wrong |= {"policy": {"scheduler": "no-such", "strategy": "no-such", "autoscaler": "no-such"}}
    path.write_text(yaml.safe_dump(wrong))
    assert main(["validate", str(path)]) == 2
    errors = capsys.readouterr().err.strip().splitlines()
    fields = ["policy.scheduler: ", "policy.strategy: ", "policy.autoscaler: ", "chaos: more than 100 "]
    assert len(errors) == 4, errors
    for error, field in zip(errors, fields, strict=True):
        assert error.startswith(f"{path}: {field}"), errors


def test_validate_lists_the_policy_names_with_the_schemas_problems(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A scenario the schema refuses (reduces 0, an unknown workload) still has its unknown
    scheduler and strategy named in the same pass (only the schema's lines came before)."""
    path = tmp_path / "wrong.yaml"
    jobs = [{"workload": "wordcount", "size_mb": 4, "reduces": 0}, {"workload": "no-such-work"}]
    wrong = {"name": "wrong", "cluster": {"reserved": 1, "transient": 1}, "jobs": jobs}
    wrong |= {"policy": {"scheduler": "no-such", "strategy": "no-such", "autoscaler": "static"}}
    path.write_text(yaml.safe_dump(wrong))
    assert main(["validate", str(path)]) == 2
    errors = capsys.readouterr().err.strip().splitlines()
    fields = ["jobs.0.reduces: ", "jobs.1: unknown workload", "policy.scheduler: 'no-such'"]
    fields.append("policy.strategy: ")
    assert len(errors) == 4, errors
    for error, field in zip(errors, fields, strict=True):
        assert error.startswith(f"{path}: {field}"), errors
