#!/bin/sh
# Entrypoint of the transient-testbed image: the first argument picks the role.
#
#   agent  ARGS...   testbed agent ARGS...     (an emulated node)
#   master ARGS...   testbed run ARGS... (then testbed report $TESTBED_REPORT_DIR when set)       (runs a scenario)
#   broker ARGS...   mosquitto -c <generated config> ARGS...
#   anything else    executed as given (e.g. `testbed report runs/x`, `sh`)
#
# Before starting a role it writes what the healthcheck should probe to $PROBE_FILE.
#
# Broker environment: TESTBED_BROKER_PORT (default 1883). With TESTBED_SECRETS_FILE (a
# compose run's Docker secret, `testbed compose`), the testbed's own broker (amqtt) with the
# run's logins and access rules: the master's, one per node, the enrolment login. Else
# Mosquitto: when TESTBED_MQTT_USERNAME and TESTBED_MQTT_PASSWORD are both set, clients
# must log in with them, else anonymous clients are allowed.
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

# testbed run ARGS, then `testbed report` of $TESTBED_REPORT_DIR (the run's --out) whatever
# the run's outcome; the exit status is the run's. SIGTERM/SIGINT go to the run, whose
# cleanup must finish before the report.
run_then_report() {
    testbed run "$@" &
    run_pid=$!
    trap 'kill -TERM "$run_pid" 2>/dev/null' TERM INT
    status=0
    while kill -0 "$run_pid" 2>/dev/null; do
        wait "$run_pid" && status=0 || status=$?
    done
    trap - TERM INT
    testbed report "$TESTBED_REPORT_DIR" || echo "testbed report failed" >&2
    exit "$status"
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
        if [ -z "${TESTBED_REPORT_DIR:-}" ]; then
            exec testbed run "$@"
        fi
        run_then_report "$@"
        ;;
    broker)
        shift
        echo "broker ${TESTBED_BROKER_PORT:-1883}" >"$PROBE_FILE"
        if [ -n "${TESTBED_SECRETS_FILE:-}" ]; then
            exec testbed broker --host 0.0.0.0 --port "${TESTBED_BROKER_PORT:-1883}" "$@"
        fi
        config="$(write_broker_config)"
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
