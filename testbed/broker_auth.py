"""The embedded broker's login check: only the run's own users, with their passwords.

Loaded by amqtt (by dotted path) in the broker's process only. The users come
from the run (``testbed.broker.EmbeddedBroker``) through the environment, so no
password is ever written to a file or a command line.
"""

from __future__ import annotations

import hmac
from dataclasses import dataclass, field

from amqtt.plugins.base import BaseAuthPlugin
from amqtt.session import Session


class RunAuthPlugin(BaseAuthPlugin):
    async def authenticate(self, *, session: Session) -> bool:
        expected = self.config.users.get(session.username or "")
        given = session.password or ""
        if isinstance(given, str):
            given = given.encode()
        return expected is not None and hmac.compare_digest(given, expected.encode())

    @dataclass
    class Config:
        users: dict[str, str] = field(default_factory=dict)
        """User name -> password."""
