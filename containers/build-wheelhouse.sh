#!/usr/bin/env bash
# Build ./wheelhouse on the host: the project, its dependencies (with its node extra) and
# its build backend, as wheels for the containers' Python (CPython 3.11, manylinux x86_64),
# so that containers/Dockerfile can install everything offline (pip install --no-index).
#
# Usage: containers/build-wheelhouse.sh [--clean]
#   --clean   empty the wheelhouse first (drops wheels of versions no longer needed)
# Environment:
#   PYTHON   host interpreter whose pip fetches the wheels (default python3)
#
# On a CPython 3.11 x86_64 Linux host, `pip wheel` resolves for the host, which is the
# target (and builds any sdist-only dependency against a compatible interpreter). On any
# other host it downloads binary wheels for the target platform instead. Either way the
# result is checked by resolving the project offline from the wheelhouse for the target.
set -euo pipefail

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
readonly REPO_ROOT
readonly WHEELHOUSE="$REPO_ROOT/wheelhouse"
readonly PYTHON="${PYTHON:-python3}"
readonly TARGET_PYTHON=3.11
readonly TARGET_ABI=cp311

clean=0
for arg in "$@"; do
    case "$arg" in
        --clean) clean=1 ;;
        -h|--help) sed -n '2,15p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "build-wheelhouse.sh: unknown argument: $arg" >&2; exit 2 ;;
    esac
done

log() { echo "build-wheelhouse.sh: $*" >&2; }

[[ $clean -eq 1 ]] && rm -rf "$WHEELHOUSE"
mkdir -p "$WHEELHOUSE"

# pip's platform tags for manylinux wheels the target (glibc 2.36, Debian bookworm) can load.
# Older pip does not expand manylinux_2_36 to the older tags by itself.
platform_args=()
for minor in $(seq 36 -1 5); do
    platform_args+=(--platform "manylinux_2_${minor}_x86_64")
done
platform_args+=(--platform manylinux2014_x86_64 --platform manylinux2010_x86_64
                --platform manylinux1_x86_64)
target_args=(--python-version "$TARGET_PYTHON" --implementation cp --abi "$TARGET_ABI"
             --only-binary=:all: "${platform_args[@]}")

# "3.11 x86_64 CPython" when the host interpreter is the target.
host_python="$("$PYTHON" -c 'import platform, sys
print(f"{sys.version_info.major}.{sys.version_info.minor}", platform.machine(),
      platform.python_implementation(), sys.platform)')"

build_requirements() {
    "$PYTHON" - "$REPO_ROOT/pyproject.toml" <<'EOF'
import sys, tomllib
with open(sys.argv[1], "rb") as f:
    print("\n".join(tomllib.load(f)["build-system"]["requires"]))
EOF
}

cd "$REPO_ROOT"
mapfile -t backend < <(build_requirements)
if [[ "$host_python" == "$TARGET_PYTHON x86_64 CPython linux" ]]; then
    log "host Python is the target: pip wheel"
    "$PYTHON" -m pip wheel --prefer-binary --wheel-dir "$WHEELHOUSE" ".[node]" "${backend[@]}" wheel
else
    log "host Python is '$host_python': downloading cp311 manylinux wheels"
    "$PYTHON" -m pip wheel --no-deps --wheel-dir "$WHEELHOUSE" .
    "$PYTHON" -m pip download --dest "$WHEELHOUSE" "${target_args[@]}" \
        --find-links "$WHEELHOUSE" "transient-testbed[node]" "${backend[@]}" wheel
fi

log "checking that the project resolves offline from the wheelhouse for the target"
# --isolated: ignore the host's pip configuration (extra indexes, find-links).
# --target is required by pip for platform options; --dry-run writes nothing into it.
check_dir="$(mktemp -d)"
trap 'rmdir "$check_dir"' EXIT
"$PYTHON" -m pip --isolated install --dry-run --ignore-installed --quiet \
    --no-index --find-links "$WHEELHOUSE" --target "$check_dir" "${target_args[@]}" \
    "transient-testbed[node]" "${backend[@]}" wheel
log "$(find "$WHEELHOUSE" -name '*.whl' | wc -l) wheels, $(du -sh "$WHEELHOUSE" | cut -f1) in $WHEELHOUSE"
