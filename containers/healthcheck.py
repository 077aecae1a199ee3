#!/usr/bin/env python3
"""Healthcheck of the transient-testbed image (Docker HEALTHCHECK).

The entrypoint writes the role and its port to the probe file before starting the role:

- broker: an MQTT CONNECT must be answered with a CONNACK. Any return code counts, since
  a refused login still proves the broker serves MQTT.
- agent: its data-plane port (aiohttp) must accept a TCP connection.
- master, or a container started with a plain command: nothing to probe; the container
  runs only as long as its process does.

Exit status 0 = healthy, 1 = unhealthy (Docker's convention).
"""

import socket
import sys
from pathlib import Path

PROBE_FILE = Path("/tmp/testbed-probe")
TIMEOUT_S = 2.0
# MQTT 3.1.1 CONNECT: clean session, keepalive 10 s, client id "hc".
MQTT_CONNECT = bytes.fromhex("100e00044d5154540402000a00026863")
MQTT_CONNACK_TYPE = 0x20


def broker_answers(port: int) -> bool:
    with socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT_S) as conn:
        conn.sendall(MQTT_CONNECT)
        reply = conn.recv(4)
    return len(reply) == 4 and reply[0] == MQTT_CONNACK_TYPE


def port_accepts(port: int) -> bool:
    with socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT_S):
        return True


def healthy() -> bool:
    try:
        role, *rest = PROBE_FILE.read_text().split()
    except (FileNotFoundError, ValueError):
        return True
    try:
        if role == "broker":
            return broker_answers(int(rest[0]))
        if role == "agent":
            return port_accepts(int(rest[0]))
    except OSError:
        return False
    return True


if __name__ == "__main__":
    sys.exit(0 if healthy() else 1)
