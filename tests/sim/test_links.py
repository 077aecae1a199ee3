"""The model's links: ``ExecutionModel.move`` books as two calls of ``testbed.node.bandwidth.book``
would (the arithmetic it inlines), to the last bit, at each link's rate now (a slowed node's
divided by its factor)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from master.execution_model import ExecutionModel, Links
from testbed.node.bandwidth import book
from testbed.scenario.schema import parse_scenario

_TIMES = st.floats(0.0, 1e5, allow_nan=False, allow_infinity=False)
_SLOW = st.one_of(st.just(1.0), st.floats(1.0, 100.0))


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
    st.lists(
        st.tuples(_TIMES, _TIMES, _TIMES, st.integers(1, 2**31), st.booleans(), _SLOW, _SLOW),
        min_size=1,
        max_size=8,
    ),
)
def test_move_books_both_links_as_book_does(
    reserved: float,
    transient: float,
    burst: float,
    moves: list[tuple[float, float, float, int, bool, float, float]],
) -> None:
    """At each link's rate now: its class's divided by its node's slowdown (``Links.slow``), as
    a real node's bucket is divided (``testbed.node.slow_episodes``)."""
    model = MODELS[burst]
    rate = model.nic = {"reserved": reserved * 1e6 / 8, "transient": transient * 1e6 / 8}
    for out_free, in_free, now, nbytes, from_reserved, out_slow, in_slow in moves:
        sender_class, receiver_class = (
            ("reserved", "transient") if from_reserved else ("transient", "reserved")
        )
        sender, receiver = Links(out_free=out_free, slow=out_slow), Links(in_free=in_free, slow=in_slow)
        wait = model.move(nbytes, now, sender, sender_class, receiver, receiver_class)
        out_at, out_s = book(out_free, now, nbytes, rate[sender_class] / out_slow, burst)
        in_at, in_s = book(in_free, now, nbytes, rate[receiver_class] / in_slow, burst)
        assert (sender.out_free, receiver.in_free, wait) == (out_at, in_at, max(out_s, in_s))


def test_a_slowed_links_booking_takes_its_factor_times_as_long_and_is_given_back_as_booked() -> None:
    """1,000,000 bytes on links of 125,000,000 bytes a second (1000 Mb/s), no burst: 8 ms at
    full speed; the receiver 3x slow (a node of factor 1.5 in an episode of 2): 24 ms, and the
    sender's link free at 8 ms. Half of it given back at the factors it was booked at, after
    the receiver's episode ended: 4 ms and 12 ms sooner (at the rate now, 1.5: 8 ms)."""
    model = _model(0.0)
    model.nic = {"reserved": 125e6, "transient": 125e6}
    sender, receiver = Links(), Links(slow=1.5 * 2)
    assert model.move(1_000_000, 0.0, sender, "reserved", receiver, "transient") == pytest.approx(0.024)
    assert (sender.out_free, receiver.in_free) == pytest.approx((0.008, 0.024))
    receiver.slow = 1.5
    model.unbook(500_000, (sender, "reserved", 1.0), (receiver, "transient", 3.0))
    assert (sender.out_free, receiver.in_free) == pytest.approx((0.004, 0.012))


def test_the_nic_rates_are_the_scenarios() -> None:
    model = _model(0.05)
    cluster = model.scenario.cluster
    for node_class in ("reserved", "transient"):
        assert model.nic_bytes_s(node_class) == getattr(cluster, node_class).network_mbps * 1e6 / 8
