#!/bin/sh
# Entrypoint of the transient-testbed image: the first argument picks the role.
#
#   agent  ARGS...   testbed agent ARGS...     (an emulated node)
#   master ARGS...   testbed run ARGS...       (runs a scenario)
#   broker ARGS...   mosquitto -c <generated config> ARGS...
#   anything else    executed as given (e.g. `testbed report runs/x`, `sh`)
#
# Before starting a role it writes what the healthcheck should probe to $PROBE_FILE.
#
# Broker environment: TESTBED_BROKER_PORT (default 1883); when TESTBED_MQTT_USERNAME and
# TESTBED_MQTT_PASSWORD are both set, clients must log in with them, else anonymous
# clients are allowed.
set -eu

PROBE_FILE=/tmp/testbed-probe

# The value of --port in the agent's arguments (the agent's default otherwise).
agent_port() {
    port=7070
    while [ $# -gt 0 ]; do
        case "$1" in
            --port) port="$2"; shift ;;
            --port=*) port="${1#--port=}" ;;
        esac
        shift
    done
    echo "$port"
}

write_broker_config() {
    config=/tmp/mosquitto/mosquitto.conf
    mkdir -p /tmp/mosquitto
    {
        echo "listener ${TESTBED_BROKER_PORT:-1883} 0.0.0.0"
        echo "persistence false"
        echo "log_dest stdout"
    } >"$config"
    if [ -n "${TESTBED_MQTT_USERNAME:-}" ] && [ -n "${TESTBED_MQTT_PASSWORD:-}" ]; then
        (umask 077 && mosquitto_passwd -b -c /tmp/mosquitto/passwd \
            "$TESTBED_MQTT_USERNAME" "$TESTBED_MQTT_PASSWORD")
        echo "allow_anonymous false" >>"$config"
        echo "password_file /tmp/mosquitto/passwd" >>"$config"
    else
        echo "allow_anonymous true" >>"$config"
    fi
    echo "$config"
}

role="${1:-}"
case "$role" in
    agent)
        shift
        echo "agent $(agent_port "$@")" >"$PROBE_FILE"
        exec testbed agent "$@"
        ;;
    master)
        shift
        echo "master" >"$PROBE_FILE"
        exec testbed run "$@"
        ;;
    broker)
        shift
        config="$(write_broker_config)"
        echo "broker ${TESTBED_BROKER_PORT:-1883}" >"$PROBE_FILE"
        exec mosquitto -c "$config" "$@"
        ;;
    "")
        echo "usage: agent|master|broker ARGS... or a command" >&2
        exit 2
        ;;
    *)
        exec "$@"
        ;;
esac
