#!/usr/bin/env bash
# Build the offline base image from Debian packages: debootstrap + docker import.
#
# For hosts that cannot pull images from a registry. The result plays the role of
# python:3.11-slim for containers/Dockerfile (BASE_IMAGE build argument), with the
# broker and init packages already installed.
#
# Usage: containers/build-base.sh [--force]
#   --force   rebuild even when the image already exists
# Environment:
#   BASE_IMAGE_TAG   image tag to produce (default transient-testbed/base:bookworm)
#   DEBIAN_MIRROR    Debian mirror, reached over plain HTTP (default http://deb.debian.org/debian)
#
# The downloaded .deb files are cached as a debootstrap tarball under build/debootstrap/,
# so a rebuild (--force) does not download anything again. Needs root (debootstrap).
set -euo pipefail

readonly IMAGE="${BASE_IMAGE_TAG:-transient-testbed/base:bookworm}"
readonly SUITE=bookworm
readonly MIRROR="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"
readonly PACKAGES=python3,python3-venv,mosquitto,ca-certificates,tini
REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
readonly REPO_ROOT
readonly CACHE_DIR="$REPO_ROOT/build/debootstrap"

force=0
for arg in "$@"; do
    case "$arg" in
        --force) force=1 ;;
        -h|--help) sed -n '2,15p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "build-base.sh: unknown argument: $arg" >&2; exit 2 ;;
    esac
done

log() { echo "build-base.sh: $*" >&2; }

if [[ $force -eq 0 ]] && docker image inspect "$IMAGE" >/dev/null 2>&1; then
    log "$IMAGE already exists (use --force to rebuild)"
    exit 0
fi
if [[ $(id -u) -ne 0 ]]; then
    log "debootstrap needs root"
    exit 1
fi
command -v debootstrap >/dev/null || { log "debootstrap is not installed (apt-get install debootstrap)"; exit 1; }

mkdir -p "$CACHE_DIR"
# The package list is part of the cache key: changing it downloads a fresh set.
PACKAGES_KEY="$(echo "$PACKAGES" | sha256sum | cut -c1-12)"
readonly PACKAGES_KEY
readonly DEBS_TARBALL="$CACHE_DIR/$SUITE-minbase-$PACKAGES_KEY.tgz"

workdir="$(mktemp -d "$CACHE_DIR/work.XXXXXX")"
cleanup() {
    # debootstrap mounts /proc and /sys inside the target; never delete through a mount.
    findmnt -rn -o TARGET | grep -F "$workdir/" | sort -r | xargs -r -n1 umount -l || true
    rm -rf --one-file-system "$workdir"
}
trap cleanup EXIT

debootstrap_args=(--variant=minbase --include="$PACKAGES" --components=main)

if [[ ! -f "$DEBS_TARBALL" ]]; then
    log "downloading $SUITE packages from $MIRROR"
    debootstrap "${debootstrap_args[@]}" --make-tarball="$workdir/debs.tgz" \
        "$SUITE" "$workdir/download" "$MIRROR"
    mv "$workdir/debs.tgz" "$DEBS_TARBALL"
else
    log "using cached packages $DEBS_TARBALL"
fi

rootfs="$workdir/rootfs"
log "bootstrapping $SUITE into $rootfs"
debootstrap "${debootstrap_args[@]}" --unpack-tarball="$DEBS_TARBALL" "$SUITE" "$rootfs" "$MIRROR"

# Same slimming as Debian's official container images: no docs, man pages or apt caches,
# and keep it that way for packages installed later.
cat >"$rootfs/etc/dpkg/dpkg.cfg.d/docker-slim" <<'EOF'
path-exclude /usr/share/doc/*
path-include /usr/share/doc/*/copyright
path-exclude /usr/share/man/*
path-exclude /usr/share/info/*
path-exclude /usr/share/locale/*
EOF
cat >"$rootfs/etc/apt/apt.conf.d/docker-slim" <<'EOF'
APT::Install-Recommends "false";
APT::Install-Suggests "false";
DPkg::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/*.bin || true"; };
EOF
cat >"$rootfs/etc/apt/sources.list" <<EOF
deb $MIRROR $SUITE main
deb $MIRROR $SUITE-updates main
deb http://deb.debian.org/debian-security $SUITE-security main
EOF
find "$rootfs/usr/share/doc" -mindepth 1 -not -name copyright -not -type d -delete
find "$rootfs/usr/share/doc" -mindepth 1 -type d -empty -delete
rm -rf "$rootfs"/usr/share/{man,info,locale}/* \
       "$rootfs"/var/cache/apt/* "$rootfs"/var/lib/apt/lists/* \
       "$rootfs"/var/log/*.log "$rootfs"/var/log/apt/* "$rootfs"/tmp/*
# The engine provides these at run time.
: >"$rootfs/etc/hostname"
: >"$rootfs/etc/resolv.conf"

log "importing $IMAGE"
tar --numeric-owner --xattrs -C "$rootfs" \
    --exclude=./dev/* --exclude=./proc/* --exclude=./sys/* -c . |
    docker import \
        --change 'ENV LANG=C.UTF-8' \
        --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
        --change 'CMD ["/bin/bash"]' \
        --message "debootstrap $SUITE minbase + $PACKAGES" \
        - "$IMAGE" >/dev/null
docker image ls "$IMAGE" --format '{{.Repository}}:{{.Tag}} {{.Size}}' >&2
