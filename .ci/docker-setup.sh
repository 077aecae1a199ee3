#!/usr/bin/env bash
# Prepare a Debian bookworm machine (as root) for the Docker tests: install the engine,
# start it when none answers, and build the testbed images offline.
#
# Usage: .ci/docker-setup.sh
# Environment:
#   DOCKERD_LOG            where a dockerd started here logs (default /var/log/dockerd.log)
#   DOCKERD_WAIT_SECONDS   how long to wait for it to answer (default 60)
#   PYTHON                 host interpreter that builds the wheelhouse (default python3)
set -euo pipefail

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
readonly REPO_ROOT
readonly DOCKERD_LOG="${DOCKERD_LOG:-/var/log/dockerd.log}"
readonly DOCKERD_WAIT_SECONDS="${DOCKERD_WAIT_SECONDS:-60}"

log() { echo "docker-setup.sh: $*" >&2; }

install_missing_packages() {
    local missing=()
    command -v dockerd >/dev/null || missing+=(docker.io)
    command -v docker-compose >/dev/null || missing+=(docker-compose)
    command -v debootstrap >/dev/null || missing+=(debootstrap)
    # The wheelhouse is built with the host's pip.
    "${PYTHON:-python3}" -m pip --version >/dev/null 2>&1 || missing+=(python3-pip)
    if [[ ${#missing[@]} -gt 0 ]]; then
        log "installing ${missing[*]}"
        apt-get update
        DEBIAN_FRONTEND=noninteractive apt-get install --yes --no-install-recommends "${missing[@]}"
    fi
}

start_dockerd() {
    if docker info >/dev/null 2>&1; then
        log "a Docker engine is already running"
        return
    fi
    log "starting dockerd (log: $DOCKERD_LOG)"
    # setsid: the engine outlives this script and is not killed with its process group.
    setsid dockerd >"$DOCKERD_LOG" 2>&1 </dev/null &
    local pid=$!
    local waited=0
    until docker info >/dev/null 2>&1; do
        if ! kill -0 "$pid" 2>/dev/null; then
            log "dockerd exited; last lines of its log:"
            tail -n 30 "$DOCKERD_LOG" >&2
            exit 1
        fi
        if [[ $waited -ge $DOCKERD_WAIT_SECONDS ]]; then
            log "dockerd did not answer within ${DOCKERD_WAIT_SECONDS}s; last lines of its log:"
            tail -n 30 "$DOCKERD_LOG" >&2
            exit 1
        fi
        sleep 1
        waited=$((waited + 1))
    done
    log "dockerd (pid $pid) answers after ${waited}s"
}

if [[ $(id -u) -ne 0 ]]; then
    log "run as root (installs packages, starts dockerd, runs debootstrap)"
    exit 1
fi
install_missing_packages
start_dockerd
"$REPO_ROOT/containers/build-images.sh"
