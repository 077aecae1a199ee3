"""What the live view's browser tests share: the page's shown state read back, and a
screenshot's pixel spread (a blank page has none)."""

from __future__ import annotations

import io

import numpy as np
from matplotlib import image

from tests.support.headless_chromium import Tab

SHOWN = """JSON.stringify({
    nodes: Object.fromEntries([...document.querySelectorAll('#cluster .node')]
        .map(n => [n.dataset.node, n.dataset.state])),
    jobs: Object.fromEntries([...document.querySelectorAll('#jobs tbody tr')]
        .map(r => [r.dataset.job, r.dataset.status])),
    evictions: [...document.querySelectorAll('#eviction-list li')].map(li => li.dataset.node),
    clock: document.getElementById('clock-label').textContent,
    ended: document.body.dataset.ended === 'true',
})"""
"""What the page shows: each node card's state, each job row's status, the evicted nodes listed,
the clock, and whether the stream's end is drawn."""
DRAWN_TO_THE_END = "document.body.dataset.ended === 'true'"
"""The page has drawn the state after the stream's last event."""
RUNNING = "[...window.testbedUi.state.attempts.values()].filter(a => a.status === 'running').map(a => a.task)"
"""The tasks whose attempts the page draws as running."""
RELAUNCHED = "[...window.testbedUi.state.attempts.values()].filter(a => a.relaunch).map(a => a.task)"
"""The tasks of the attempts the page marks as relaunches."""


def page_errors(tab: Tab) -> list[str]:
    """The page's errors, but for its event stream's request cut short when the page closes it
    at the stream's end (``net::ERR_ABORTED``, as the server ends the response: a race)."""
    return [error for error in tab.problems().console_errors if "ERR_ABORTED" not in error]


def pixel_spread(png: bytes) -> float:
    """The standard deviation of a screenshot's grey levels (0 for a page of one colour)."""
    pixels = np.asarray(image.imread(io.BytesIO(png), format="png"), dtype=float)
    return float(pixels[..., :3].mean(axis=-1).std() * 255)


def slide_to(fraction: float) -> str:
    """JavaScript moving the time slider to ``fraction`` of the journal, as a user's drag does."""
    return (
        "(() => { const s = document.getElementById('clock');"
        f" s.value = Math.round(s.max * {fraction}); s.dispatchEvent(new Event('input')); }})()"
    )
