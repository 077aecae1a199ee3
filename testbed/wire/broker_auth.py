"""The embedded broker's login check and access rules: only the run's own users, each
with its own topics.

Loaded by amqtt (by dotted path) in the broker's process only. The master's login
and the agents' secret come from the run (``testbed.wire.broker.EmbeddedBroker``) in a
private file; an agent's user name is its node id and its password is derived from
the secret (``RunCredentials.agent_for``), so the broker needs no list of nodes.
The rules are Mosquitto's ``acl_file`` of the same run (``testbed.wire.broker``):
the master publishes commands to every node and reads every node's reports; an
agent publishes its own node's state, heartbeats and task updates and reads its
own node's commands, nothing else. A compose or Swarm run's broker (``testbed
compose``) also accepts the enrolment login (``enrol_password``): it may only ask
for a name and read the answers, sealed for the agent that asked.
"""

from __future__ import annotations

import hmac
from dataclasses import dataclass

from amqtt.contexts import Action
from amqtt.plugins.base import BaseAuthPlugin, BaseTopicPlugin
from amqtt.plugins.topic_checking import TopicAccessControlListPlugin
from amqtt.session import Session

from testbed.wire.broker import AGENT_NAME, ENROL_USER, agent_password, publish_rules, subscribe_rules


class RunAuthPlugin(BaseAuthPlugin):
    async def authenticate(self, *, session: Session) -> bool:
        c = self.config
        name = session.username or ""
        given = session.password or ""
        if isinstance(given, bytes):
            given = given.decode("utf-8", "surrogateescape")
        if not c.master or not c.agent_secret:
            return False
        if name == c.master:
            expected = c.master_password
        elif name == ENROL_USER:
            expected = c.enrol_password
            if not expected:
                return False
        elif AGENT_NAME.fullmatch(name):
            expected = agent_password(c.agent_secret, name)
        else:
            return False
        return hmac.compare_digest(given.encode("utf-8", "surrogateescape"), expected.encode())

    @dataclass
    class Config:
        master: str = ""
        master_password: str = ""
        agent_secret: str = ""
        enrol_password: str = ""
        """The enrolment login's (compose, Swarm); "": no such login."""


class RunTopicPlugin(BaseTopicPlugin):
    async def topic_filtering(
        self, *, session: Session | None = None, topic: str | None = None, action: Action | None = None
    ) -> bool:
        if action == Action.RECEIVE:  # what a client receives is what it could subscribe to
            return True
        user = session.username if session else None
        if not user or not topic or "#" in topic:
            return False
        rules = publish_rules if action == Action.PUBLISH else subscribe_rules
        allowed = rules(user, self.config.master)
        return any(TopicAccessControlListPlugin.topic_ac(topic, rule) for rule in allowed)

    @dataclass
    class Config:
        master: str = ""
