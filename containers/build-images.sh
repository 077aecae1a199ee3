#!/usr/bin/env bash
# Build the testbed image offline: the Debian base image, the wheelhouse, then the image,
# labelled org.transient-testbed.requirements=SHA-256 of its requirements
# (containers/requirements.py: the dependencies and the node extra).
#
# Usage: containers/build-images.sh [--force-base]
#   --force-base   rebuild the base image even when it exists
# Environment:
#   BASE_IMAGE_TAG   base image tag (default transient-testbed/base:bookworm)
#   IMAGE            testbed image tag (default transient-testbed:latest)
set -euo pipefail

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
readonly REPO_ROOT
export BASE_IMAGE_TAG="${BASE_IMAGE_TAG:-transient-testbed/base:bookworm}"
readonly IMAGE="${IMAGE:-transient-testbed:latest}"

base_args=()
for arg in "$@"; do
    case "$arg" in
        --force-base) base_args+=(--force) ;;
        -h|--help) sed -n '2,11p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "build-images.sh: unknown argument: $arg" >&2; exit 2 ;;
    esac
done

"$REPO_ROOT/containers/build-base.sh" "${base_args[@]}"
"$REPO_ROOT/containers/build-wheelhouse.sh"
# Always built: Docker's layer cache keys on pyproject.toml, the wheelhouse and the code, so
# an image of older requirements or code is rebuilt and an up-to-date one costs seconds.
docker build --file "$REPO_ROOT/containers/Dockerfile" \
    --build-arg BASE_IMAGE="$BASE_IMAGE_TAG" \
    --build-arg REQUIREMENTS_SHA="$("${PYTHON:-python3}" "$REPO_ROOT/containers/requirements.py" --sha)" \
    --tag "$IMAGE" "$REPO_ROOT"
docker image ls "$IMAGE" --format '{{.Repository}}:{{.Tag}} {{.Size}}'
