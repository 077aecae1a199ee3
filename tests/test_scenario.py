"""Scenario validation: one clear line per problem, exit status 2 from the CLI, --set overrides."""

from __future__ import annotations

from pathlib import Path

import pytest

from testbed.app.cli import main
from testbed.scenario.schema import ScenarioError, load_scenario
from tests.support.scenarios import problems, write

GOOD = """\
name: demo
cluster: {reserved: 1, transient: 2}
jobs:
  - {workload: wordcount, size_mb: 4}
"""


def test_good_scenario_loads(tmp_path: Path) -> None:
    scenario = load_scenario(write(tmp_path, GOOD))
    assert scenario.cluster.transient.count == 2
    assert scenario.cluster.transient.price_per_hour < scenario.cluster.reserved.price_per_hour


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            GOOD.replace("transient: 2", "transient: three"),
            "cluster.transient: expected a node count or a mapping with count, slots, memory_mb",
        ),
        (GOOD.replace("wordcount", "wc"), "jobs.0: unknown workload 'wc'"),
        (GOOD.replace("size_mb: 4", "size_mb: -1"), "jobs.0.size_mb: Input should be greater than 0"),
        (GOOD.replace("size_mb: 4", "submit_at: soon"), "jobs.0.submit_at: expected a duration such as 30s"),
        (GOOD + "bogus: 1\n", "bogus: unknown field; remove it or check its spelling"),
        (GOOD.replace("name: demo", "name: 'a b'"), "name: String should match pattern"),
        (GOOD + "broker: tcp://x\n", "broker: expected 'embedded', 'mosquitto', 'amqtt' or mqtt://HOST:PORT"),
        (GOOD.replace("size_mb: 4", "input: /nonexistent/*.txt"), "jobs.0.input: no input file matches"),
        (
            "name: x\ncluster: {reserved: 0, transient: 0}\njobs: [{workload: sort}]\n",
            "cluster: the cluster has no nodes",
        ),
        ("- a\n- b\n", "expected a mapping of scenario fields, found list"),
        (GOOD + "seed: -1\n", "seed: Input should be greater than or equal to 0; found -1"),
        (GOOD + "seed: 99999999999999999999\n", "seed: Input should be less than or equal to 4294967295"),
        (GOOD.replace("size_mb: 4", "seed: -3"), "jobs.0.seed: Input should be greater than or equal to 0"),
        ("name: [unclosed\n", "not valid YAML"),
    ],
)
def test_each_problem_names_the_field(tmp_path: Path, text: str, expected: str) -> None:
    found = problems(tmp_path, text)
    assert any(expected in line for line in found), found
    assert all(line.startswith(str(tmp_path / "s.yaml")) for line in found)


def test_sort_input_must_be_whole_records(tmp_path: Path) -> None:
    (tmp_path / "records.dat").write_bytes(b"k" * 1050)
    text = GOOD.replace("wordcount, size_mb: 4", f"sort, input: {tmp_path / 'records.dat'}")
    found = problems(tmp_path, text)
    assert len(found) == 1 and "jobs.0.input: expected files of whole 100-byte records" in found[0]
    assert "found 1050 bytes in" in found[0]
    (tmp_path / "records.dat").write_bytes(b"k" * 1000)
    assert load_scenario(write(tmp_path, text)).jobs[0].input == str(tmp_path / "records.dat")


def test_every_problem_is_reported(tmp_path: Path) -> None:
    text = GOOD.replace("transient: 2", "transient: -1") + "seed: x\n"
    found = problems(tmp_path, text)
    assert len(found) == 2
    assert {line.split(": ")[1] for line in found} == {"cluster.transient.count", "seed"}


def test_set_overrides_any_field(tmp_path: Path) -> None:
    path = write(tmp_path, GOOD)
    scenario = load_scenario(path, ["policy.scheduler=yarn", "jobs.0.size_mb=8", "cluster.transient.count=5"])
    assert scenario.policy.scheduler == "yarn"
    assert scenario.jobs[0].size_mb == 8
    assert scenario.cluster.transient.count == 5


def test_bad_override_is_a_clear_error(tmp_path: Path) -> None:
    path = write(tmp_path, GOOD)
    with pytest.raises(ScenarioError, match=r"policy\.strategy: String should match pattern"):
        load_scenario(path, ["policy.strategy=no such!"])
    with pytest.raises(ScenarioError, match=r"expected KEY\.PATH=VALUE"):
        load_scenario(path, ["nonsense"])


def test_a_value_that_is_not_yaml_is_a_clear_error(tmp_path: Path) -> None:
    path = write(tmp_path, GOOD)
    for assignment in ("seed=[", "seed=!!python/object:os.system x", "name={a"):
        with pytest.raises(ScenarioError, match=r"--set '.*': the value is not valid YAML"):
            load_scenario(path, [assignment])


def test_a_file_that_is_not_utf8_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_bytes(GOOD.encode() + b"# caf\xe9\n")
    with pytest.raises(ScenarioError, match=r"s\.yaml: cannot read the file: not UTF-8 text \(byte 0xe9"):
        load_scenario(path)


def test_cli_validate_exit_codes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", str(write(tmp_path, GOOD))]) == 0
    assert "ok" in capsys.readouterr().out
    bad = write(tmp_path, GOOD.replace("size_mb: 4", "size_mb: big"))
    assert main(["validate", str(bad)]) == 2
    err = capsys.readouterr().err
    assert "jobs.0.size_mb" in err and "Traceback" not in err
    assert main(["validate", str(tmp_path / "missing.yaml")]) == 2
    assert "cannot read the file" in capsys.readouterr().err
    assert main(["run"]) == 2
    good = tmp_path / "good.yaml"
    good.write_text(GOOD)
    assert main(["validate", str(good), "--set", "seed=["]) == 2
    assert "seed=[" in capsys.readouterr().err
    assert main(["run", str(good), "--out", str(good / "run")]) == 2  # a file is in the way
    assert "--out" in capsys.readouterr().err
    assert main(["sweep", str(good), "--vary", "seed=1,2", "--out", str(good / "sweep")]) == 2
    assert "testbed sweep --out" in capsys.readouterr().err
    assert main(["frobnicate"]) == 2


SHIPPED = sorted(Path(__file__).resolve().parents[1].joinpath("scenarios").glob("*.yaml"))


def test_shipped_scenarios_validate() -> None:
    """Every shipped scenario loads, and submits work: jobs, or a stream of arriving ones."""
    assert any(path.name == "quickstart.yaml" for path in SHIPPED), SHIPPED  # the glob found them
    for path in SHIPPED:
        scenario = load_scenario(path)
        assert scenario.jobs or scenario.arrivals is not None, path


def test_shipped_scenarios_validate_from_any_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As compose runs them: the scenarios directory mounted elsewhere, another working directory.
    Every path a scenario names resolves beside its file, so each loads as it does from the
    directory the tests run in."""
    here = [load_scenario(path) for path in SHIPPED]
    monkeypatch.chdir(tmp_path)
    assert [load_scenario(path) for path in SHIPPED] == here


PROFILE = (
    '{"workload": "sort", "role": "map", "ideal_memory_mb": 4, "ideal_duration_s": 1.0,'
    ' "points": [[0.5, 2.0], [1.0, 1.0]]}'
)


def test_profile_paths_resolve_beside_the_scenario_file_then_in_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "scenarios" / "profiles").mkdir(parents=True)
    (tmp_path / "scenarios" / "profiles" / "sort-map.json").write_text(PROFILE)
    (tmp_path / "cwd.json").write_text(PROFILE)
    scenario_file = tmp_path / "scenarios" / "s.yaml"
    scenario_file.write_text(GOOD + "profiles: [profiles/sort-map.json, cwd.json]\n")
    monkeypatch.chdir(tmp_path)
    scenario = load_scenario(scenario_file)
    assert scenario.profiles == [str(tmp_path / "scenarios" / "profiles" / "sort-map.json"), "cwd.json"]
    monkeypatch.chdir(tmp_path / "scenarios")
    with pytest.raises(ScenarioError, match=r"no such profile file: cwd\.json"):
        load_scenario(scenario_file)


INLINE = (
    "{workload: sort, role: map, ideal_memory_mb: 4, ideal_duration_s: 1.0, points: [[0.5, 2.0], [1.0, 1.0]]}"
)


def test_profiles_may_mix_files_and_inline_models(tmp_path: Path) -> None:
    (tmp_path / "sort-reduce.json").write_text(PROFILE.replace('"map"', '"reduce"'))
    scenario = load_scenario(write(tmp_path, GOOD + f"profiles: [{INLINE}, sort-reduce.json]\n"))
    inline, path = scenario.profiles
    assert path == str(tmp_path / "sort-reduce.json")
    assert not isinstance(inline, str)
    assert (inline.workload, inline.role, inline.points) == ("sort", "map", [(0.5, 2.0), (1.0, 1.0)])


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (("[[0.5, 2.0]", "[[0.5, 0.5]"), "profiles.0.points: penalty multiplier 0.5 must be finite and >= 1"),
        (("[[0.5, 2.0]", "[[1.5, 2.0]"), "profiles.0.points: penalty fraction 1.5 is outside (0, 1]"),
        (
            ("points: [[0.5, 2.0], [1.0, 1.0]]", "points: []"),
            "profiles.0.points: a penalty curve needs at least one (fraction, multiplier) point",
        ),
        (
            ("ideal_duration_s: 1.0", "ideal_duration_s: 1.0, spill_mb: [[0.5, -3]]"),
            "profiles.0.spill_mb: spill MB -3.0 must be finite and >= 0",
        ),
        (("role: map", "role: mapper"), "profiles.0.role: Input should be 'map' or 'reduce'; found 'mapper'"),
        (
            ("workload: sort", "workload: sorting"),
            "profiles.0.workload: unknown workload; expected one of wordcount, sort, pagerank, mlr, sleep, "
            "noop, sql or a plugin's module:Class; found 'sorting'",
        ),
        (
            ("ideal_memory_mb: 4", "ideal_memory_mb: 0"),
            "profiles.0.ideal_memory_mb: Input should be greater than 0; found 0",
        ),
        (("ideal_memory_mb: 4, ", ""), "profiles.0.ideal_memory_mb: required field is missing"),
        (
            (INLINE, "7"),
            "profiles.0: expected a profile file path or a task model "
            "(workload, role, ideal_memory_mb, ideal_duration_s, points); found 7",
        ),
    ],
)
def test_a_bad_inline_model_is_one_line_naming_its_field(
    tmp_path: Path, change: tuple[str, str], expected: str
) -> None:
    assert problems(tmp_path, GOOD + f"profiles: [{INLINE.replace(*change)}]\n") == [
        f"{tmp_path / 's.yaml'}: {expected}"
    ]


def test_cli_validate_exits_2_on_a_bad_inline_model(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = write(tmp_path, GOOD + f"profiles: [{INLINE.replace('[[0.5, 2.0]', '[[0.5, 0.5]')}]\n")
    assert main(["validate", str(bad)]) == 2
    assert capsys.readouterr().err.count("profiles.0.points: penalty multiplier 0.5") == 1
