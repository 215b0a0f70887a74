#!/usr/bin/env bash
# Builds the images for running ssebench inside Docker the way task containers do (the daemon as
# root, Docker's default seccomp profile and capabilities), without Docker Hub:
#   ssebench-base:bookworm  Debian bookworm from debootstrap (Python 3.11, gcc with ASan, make,
#                           bubblewrap: present, as in some task images, but unable to run there)
#   ssebench-test:latest    the base with this checkout's wheel and its test tools in /venv
#   ssebench-task:bookworm  the base without git: a task's environment as benchmarks ship one
#                           (the examples' image for `grade --backend docker`; no ssebench in it)
#   ssebench-py:trixie      Debian trixie with python3 (3.13) alone: a task image of another Python
# Installs docker.io and debootstrap and starts dockerd when they are missing (root only).
# Each step is skipped when done; the rootfs is cached in $SSEBENCH_DOCKER_CACHE.
#   bash scripts/container.sh          # build the images
#   docker run --rm -v "$PWD:/src:ro" -w /src ssebench-test:latest \
#       /venv/bin/python -m pytest -p no:cacheprovider tests/e2e/security
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cache="${SSEBENCH_DOCKER_CACHE:-/var/cache/ssebench-docker}"
base=ssebench-base:bookworm
image=ssebench-test:latest
packages="python3,python3-venv,gcc,libc6-dev,libasan8,make,bash,procps,util-linux,patch,git,ca-certificates,bubblewrap"
docker=/usr/bin/docker  # the engine's own client (another on PATH may be newer than the engine)
say() { echo "ssebench: container: $*" >&2; }

if ! command -v dockerd >/dev/null || ! command -v debootstrap >/dev/null; then
    say "installing docker.io and debootstrap"
    apt-get update -q >/dev/null
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q docker.io debootstrap >/dev/null
fi
if ! $docker info >/dev/null 2>&1; then
    say "starting dockerd"
    mkdir -p "$cache"
    setsid nohup dockerd >>"$cache/dockerd.log" 2>&1 </dev/null &
    for _ in $(seq 60); do $docker info >/dev/null 2>&1 && break; sleep 1; done
    $docker info >/dev/null 2>&1 || { tail -20 "$cache/dockerd.log" >&2; exit 1; }
fi

# rootfs_image IMAGE SUITE PACKAGES: Debian SUITE with PACKAGES, from debootstrap, as IMAGE.
rootfs_image() {
    local image=$1 suite=$2 include=$3 stamp rootfs mirror
    stamp=$(printf '%s' "$suite $include" | sha256sum | cut -c1-16)
    rootfs="$cache/rootfs-$stamp"
    if [ "$($docker image inspect --format '{{index .Config.Labels "ssebench.rootfs"}}' "$image" 2>/dev/null)" = "$stamp" ]; then
        return
    fi
    if [ ! -f "$rootfs/.complete" ]; then
        mirror=$(awk '/^URIs:/ {print $2; exit}' /etc/apt/sources.list.d/debian.sources 2>/dev/null || true)
        say "debootstrap $suite into $rootfs"
        rm -rf "$rootfs.partial"
        debootstrap --variant=minbase --include="$include" "$suite" "$rootfs.partial" \
            "${mirror:-http://deb.debian.org/debian}" >/dev/null
        rm -rf "$rootfs.partial"/var/cache/apt/archives/*.deb "$rootfs.partial"/var/lib/apt/lists/*
        touch "$rootfs.partial/.complete"
        mv "$rootfs.partial" "$rootfs"
    fi
    say "importing $image"
    tar --numeric-owner -C "$rootfs" -c . | $docker import --change "LABEL ssebench.rootfs=$stamp" \
        --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
        --change 'ENV LANG=C.UTF-8' - "$image" >/dev/null
}
rootfs_image "$base" bookworm "$packages"
# Another Python than the grading host's (Debian 13: 3.13), for `--backend docker`'s test of an
# image whose python3 needs ssebench's compiled part built for it.
rootfs_image ssebench-py:trixie trixie python3

say "building ssebench-task:bookworm"
printf 'FROM %s\nRUN dpkg --purge git git-man && ! command -v git\n' "$base" |
    $docker build -q -t ssebench-task:bookworm - >/dev/null

# The container cannot reach a package index: everything it installs is a wheel built here.
context=$(mktemp -d)
trap 'rm -rf "$context"' EXIT
say "building wheels of ssebench and its test tools"
python3 -m pip wheel -q --disable-pip-version-check -w "$context/wheels" "$root[test]" 2>/dev/null
cat >"$context/Dockerfile" <<DOCKERFILE
FROM $base
COPY wheels /wheels
RUN python3 -m venv /venv && /venv/bin/pip install -q --no-index --find-links /wheels "ssebench[test]" && rm -rf /wheels
ENV PYTHONDONTWRITEBYTECODE=1
DOCKERFILE
say "building $image"
$docker build -q -t "$image" "$context" >/dev/null
say "ready: $image"
