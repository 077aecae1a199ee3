"""The shell side of liveness: asking an agent directly whether it lives (a ``Probe``).

The verdicts are the core's (``master.core.watch``, on the pure functions of
``master.core.liveness``); this asks the agent's ``/health`` over HTTP and says what
came back, which the shell hands the core as ``ProbeAnswered``.
"""

from __future__ import annotations

import aiohttp

from master.core.liveness import ProbeOutcome


async def probe_agent(url: str, incarnation: str, timeout_s: float) -> ProbeOutcome:
    """Whether this very agent process (same incarnation) answers on its HTTP port in time."""
    timeout = aiohttp.ClientTimeout(total=timeout_s)
    try:
        async with (
            aiohttp.ClientSession(timeout=timeout) as http,
            http.get(f"{url}/health") as response,
        ):
            body = await response.json()
    except TimeoutError:
        return "silent"
    except (aiohttp.ClientError, ValueError):
        return "refused"
    same = response.status == 200 and body.get("incarnation") == incarnation
    return "answered" if same else "refused"
