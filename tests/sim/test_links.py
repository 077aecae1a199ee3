"""The model's links: ``ExecutionModel.move`` books as two calls of ``testbed.node.bandwidth.book``
would (the arithmetic it inlines), to the last bit."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from master.sim.model import ExecutionModel, Links
from testbed.node.bandwidth import book
from testbed.scenario.schema import parse_scenario

_TIMES = st.floats(0.0, 1e5, allow_nan=False, allow_infinity=False)


def _model(burst: float) -> ExecutionModel:
    scenario = parse_scenario(
        {
            "name": "links",
            "cluster": {"reserved": 1, "transient": 1},
            "jobs": [{"workload": "sleep", "tasks": 1}],
            "simulation": {"link_burst": burst},
        }
    )
    return ExecutionModel(scenario, lambda job, stage: 256, lambda job, stage: ())


MODELS = {burst: _model(burst) for burst in (0.0, 0.05, 0.2)}


@given(
    st.floats(0.5, 100_000),
    st.floats(0.5, 100_000),
    st.sampled_from(sorted(MODELS)),
    st.lists(st.tuples(_TIMES, _TIMES, _TIMES, st.integers(1, 2**31), st.booleans()), min_size=1, max_size=8),
)
def test_move_books_both_links_as_book_does(
    reserved: float, transient: float, burst: float, moves: list[tuple[float, float, float, int, bool]]
) -> None:
    model = MODELS[burst]
    rate = model.nic = {"reserved": reserved * 1e6 / 8, "transient": transient * 1e6 / 8}
    for out_free, in_free, now, nbytes, from_reserved in moves:
        sender_class, receiver_class = (
            ("reserved", "transient") if from_reserved else ("transient", "reserved")
        )
        sender, receiver = Links(out_free=out_free), Links(in_free=in_free)
        wait = model.move(nbytes, now, sender, sender_class, receiver, receiver_class)
        out_at, out_s = book(out_free, now, nbytes, rate[sender_class], burst)
        in_at, in_s = book(in_free, now, nbytes, rate[receiver_class], burst)
        assert (sender.out_free, receiver.in_free, wait) == (out_at, in_at, max(out_s, in_s))


def test_the_nic_rates_are_the_scenarios() -> None:
    model = _model(0.05)
    cluster = model.scenario.cluster
    for node_class in ("reserved", "transient"):
        assert model.nic_bytes_s(node_class) == getattr(cluster, node_class).network_mbps * 1e6 / 8
