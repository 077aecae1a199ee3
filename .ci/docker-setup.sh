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

# Starts dockerd and waits until it answers; returns 1 when it exits or times out.
launch_dockerd() {
    setsid dockerd >"$DOCKERD_LOG" 2>&1 </dev/null &
    local pid=$!
    local waited=0
    until docker info >/dev/null 2>&1; do
        if ! kill -0 "$pid" 2>/dev/null || [[ $waited -ge $DOCKERD_WAIT_SECONDS ]]; then
            kill "$pid" 2>/dev/null || true
            return 1
        fi
        sleep 1
        waited=$((waited + 1))
    done
    log "dockerd (pid $pid) answers after ${waited}s"
}

start_dockerd() {
    if docker info >/dev/null 2>&1; then
        log "a Docker engine is already running"
        return
    fi
    log "starting dockerd (log: $DOCKERD_LOG)"
    # setsid: the engine outlives this script and is not killed with its process group.
    launch_dockerd && return
    # A daemon killed uncleanly (e.g. with the machine's session) can leave swarm-scope
    # networks in its network store that dockerd 20.10 panics on while restoring
    # (libnetwork reservePools). Images live elsewhere, so set the store aside and retry.
    local store=/var/lib/docker/network/files/local-kv.db
    if [[ -f $store ]]; then
        log "dockerd failed to start; moving its network store aside and retrying"
        mv "$store" "$store.broken.$(date +%s)"
        launch_dockerd && return
    fi
    log "dockerd did not start; last lines of its log:"
    tail -n 30 "$DOCKERD_LOG" >&2
    exit 1
}

if [[ $(id -u) -ne 0 ]]; then
    log "run as root (installs packages, starts dockerd, runs debootstrap)"
    exit 1
fi
install_missing_packages
start_dockerd
"$REPO_ROOT/containers/build-images.sh"
