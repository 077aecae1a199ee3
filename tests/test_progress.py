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
