"""The argparse hook: exit statuses, default run directory, output files."""

from __future__ import annotations

import argparse
import csv
from pathlib import Path

import pytest

from testbed.app.report import add_report_commands
from tests.support.recorded_run import RecordedRun


def run_cli(*argv: str) -> int:
    parser = argparse.ArgumentParser(prog="testbed")
    add_report_commands(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    return args.handler(args)


def test_report_writes_both_files(spark_run: RecordedRun, capsys) -> None:
    assert run_cli("report", str(spark_run.path)) == 0
    out = capsys.readouterr().out
    assert f"wrote {spark_run.path / 'report.md'}" in out
    assert (spark_run.path / "report.html").is_file()


def test_report_defaults_to_runs_latest(spark_run: RecordedRun, tmp_path: Path, monkeypatch) -> None:
    (tmp_path / "runs").mkdir()
    (tmp_path / "runs" / "latest").symlink_to(spark_run.path)
    monkeypatch.chdir(tmp_path)
    assert run_cli("report") == 0
    assert (spark_run.path / "report.md").is_file()


@pytest.mark.parametrize("command", ["report", "compare"])
def test_a_missing_run_dir_is_a_one_line_error(tmp_path: Path, command: str, capsys) -> None:
    missing = tmp_path / "no-such-run"
    assert run_cli(command, str(missing)) == 2
    captured = capsys.readouterr()
    assert captured.err == f"error: {missing}: no such run directory\n"
    assert captured.out == ""


def test_compare_prints_and_writes_tables(
    spark_run: RecordedRun, pado_run: RecordedRun, tmp_path: Path, capsys
) -> None:
    md, table = tmp_path / "cmp.md", tmp_path / "cmp.csv"
    status = run_cli("compare", str(spark_run.path), str(pado_run.path), "--md", str(md), "--csv", str(table))
    assert status == 0
    out = capsys.readouterr().out
    assert "| metric | spark | pado | pado / spark |" in out
    assert md.read_text() == out
    header = next(csv.reader(table.open()))
    assert header == ["metric", "spark", "pado", "pado / spark"]


def test_compare_cannot_write_its_file(spark_run: RecordedRun, tmp_path: Path, capsys) -> None:
    target = tmp_path / "missing-dir" / "cmp.csv"
    assert run_cli("compare", str(spark_run.path), "--csv", str(target)) == 2
    assert capsys.readouterr().err.startswith(f"error: {target}: cannot write")


def test_compare_plots_the_cdfs_overlaid(
    spark_run: RecordedRun, pado_run: RecordedRun, tmp_path: Path, capsys
) -> None:
    assert run_cli("compare", str(spark_run.path), str(pado_run.path), "--plot", str(tmp_path / "cmp")) == 0
    assert f"wrote {tmp_path / 'cmp-queue-cdf.svg'}" in capsys.readouterr().out
    assert (tmp_path / "cmp-jct-cdf.png").stat().st_size > 0
    target = tmp_path / "missing-dir" / "cmp"
    assert run_cli("compare", str(spark_run.path), "--plot", str(target)) == 2
    assert capsys.readouterr().err.startswith(f"error: {target}: cannot write the plots")
