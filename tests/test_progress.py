from testbed.app.progress import progress_line


def test_progress_line_counts_jobs_tasks_and_evictions() -> None:
    status = {
        "t": 12.5,
        "expected_jobs": 3,
        "evictions": 2,
        "jobs": [{"status": "succeeded"}, {"status": "failed"}, {"status": "running"}],
        "nodes": [
            {"class": "reserved", "status": "up", "running": ["a", "b"]},
            {"class": "transient", "status": "up", "running": ["c"]},
            {"class": "transient", "status": "lost", "running": []},
        ],
    }
    line = progress_line(status)
    assert "jobs 2/3 (1 failed)" in line
    assert "reserved 2, transient 1" in line
    assert "nodes up: 1r 1t" in line and "evictions 2" in line


async def test_the_clock_says_which_origin_and_does_not_restart_silently(tmp_path) -> None:
    from tests.support.masters import offline_master
    from tests.support.scenarios import make_scenario

    master = offline_master(make_scenario(), tmp_path)
    before = progress_line(master.api.status())
    assert before.startswith("[launching nodes") and "s wall]" in before
    master.begin()
    after = progress_line(master.api.status())
    assert after.startswith("[run ") and "s wall]" in after


def test_a_simulated_runs_line_has_its_clock_rate_and_an_eta_from_the_jobs_done() -> None:
    from testbed.app.progress import sim_progress_line

    status = {
        "t": 30.0,
        "expected_jobs": 4,
        "evictions": 0,
        "jobs": [{"status": "succeeded"}, {"status": "running"}],
        "nodes": [{"class": "reserved", "status": "up", "running": ["a"]}],
    }
    line = sim_progress_line(status, trace_s=187.0, events=12_000, wall_s=4.0)
    assert line.startswith("[sim 3m07s trace, 12,000 events, 3,000/s, ETA ~12.0s (from the jobs done)]")
    assert "jobs 1/4" in line
    status["jobs"][0]["status"] = "running"
    assert "ETA --" in sim_progress_line(status, trace_s=10.0, events=0, wall_s=0.0)


def test_wall_times_never_read_sixty_seconds() -> None:
    from testbed.app.progress import format_wall

    assert [format_wall(s) for s in (59.94, 59.96, 119.6, 7500.0)] == ["59.9s", "1m00s", "2m00s", "2h05m"]
