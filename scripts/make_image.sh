#!/usr/bin/env bash
# Builds the image coordinator:latest from the Dockerfile with podman (or docker;
# docs/containers.md). `make image` runs it.
#   make_image.sh             the multi-stage build from source (install_deps.sh, make build)
#   make_image.sh BIN_DIR     only the runtime stage, from binaries already built on this host
#                             (Debian 12, so the same libraries): what CI does with build/bin
#   make_image.sh --base      only the base images below, when missing (docker/make_task_image.sh)
# Base images are never pulled: when debian:bookworm or debian:bookworm-slim is missing, both are
# made from one debootstrap (minbase) of Debian's archive, the mirror apt uses here, cached as a
# tarball in ${COORD_IMAGE_CACHE:-~/.cache/coordinator} (debootstrap needs root the first time).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/container_engine.sh
TAG=${IMAGE_TAG:-coordinator:latest}
FROM_BIN=${1:-}
CACHE=${COORD_IMAGE_CACHE:-${XDG_CACHE_HOME:-${HOME:-/root}/.cache}/coordinator}

if [[ ${#ENGINE[@]} -eq 0 ]]; then
  ./scripts/install_deps.sh containers  # podman, runc, debootstrap: only what is missing
  source scripts/container_engine.sh
fi
if [[ ${#ENGINE[@]} -eq 0 ]]; then
  echo "make_image: no container engine: install podman (apt-get install podman runc) or docker" >&2
  exit 1
fi

have_image() { "${ENGINE[@]}" image inspect "$1" >/dev/null 2>&1; }

# The Debian mirror apt uses on this host (deb822 or one-line sources), else Debian's own.
debian_mirror() {
  local uri
  uri=$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources \
      2>/dev/null | grep -oE 'https?://[^ ]+/debian/?( |$)' | grep -v security | head -1 | tr -d ' ')
  echo "${uri:-http://deb.debian.org/debian}"
}

make_base_images() {
  local tarball=$CACHE/debian-bookworm-minbase.tar
  if [[ ! -s $tarball ]]; then
    command -v debootstrap >/dev/null 2>&1 \
      || { echo "make_image: debootstrap is missing (apt-get install debootstrap)" >&2; exit 1; }
    local root
    root=$(mktemp -d)
    trap 'rm -rf "$root"' EXIT
    echo "make_image: debootstrap bookworm from $(debian_mirror) (once; cached in $tarball)"
    debootstrap --variant=minbase bookworm "$root" "$(debian_mirror)" >"$root.log" 2>&1 \
      || { tail -20 "$root.log" >&2; rm -f "$root.log"; exit 1; }
    rm -f "$root.log"
    rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/*
    mkdir -p "$CACHE"
    tar -C "$root" -cf "$tarball.tmp" . && mv "$tarball.tmp" "$tarball"
    rm -rf "$root"
    trap - EXIT
  fi
  # One root file system for both names: minbase is what the official slim image holds too.
  "${ENGINE[@]}" import --change 'CMD ["bash"]' "$tarball" docker.io/library/debian:bookworm >/dev/null
  "${ENGINE[@]}" tag docker.io/library/debian:bookworm docker.io/library/debian:bookworm-slim
  echo "make_image: made debian:bookworm and debian:bookworm-slim from $tarball"
}

if ! have_image docker.io/library/debian:bookworm || ! have_image docker.io/library/debian:bookworm-slim; then
  make_base_images
fi
[[ $FROM_BIN != --base ]] || exit 0

pull=()  # podman: never reach for a registry; docker format keeps HEALTHCHECK
[[ ${ENGINE[0]} == podman ]] && pull=(--pull=never --format docker)
context=$(mktemp -d)
trap 'rm -rf "$context"' EXIT
if [[ -z $FROM_BIN ]]; then
  echo "make_image: ${ENGINE[0]} build -t $TAG (multi-stage, from source)"
  skip=()
  [[ ${ENGINE[0]} == podman ]] && skip=(--skip-unused-stages=false)  # see the Dockerfile
  "${ENGINE[@]}" build "${pull[@]}" "${skip[@]}" -t "$TAG" -f Dockerfile .
else
  ./docker/collect_runtime.sh "$FROM_BIN" . "$context"
  echo "make_image: ${ENGINE[0]} build -t $TAG (runtime stage only, binaries from $FROM_BIN)"
  "${ENGINE[@]}" build "${pull[@]}" --build-arg RUNTIME_FROM=prebuilt -t "$TAG" -f Dockerfile "$context"
  # The prebuilt stage's image, left untagged (--layers=false would not keep it, but podman 4.3
  # then fails the build at its end).
  "${ENGINE[@]}" images -q --filter dangling=true --filter label=coordinator.stage=prebuilt \
    | xargs -r "${ENGINE[@]}" rmi >/dev/null 2>&1 || true
fi

# One image per agent on the platforms' terms: the agent is the entrypoint, so a platform that
# runs `IMAGE --host 0.0.0.0 --port 9009 --card-url http://...` starts it (coordinator-green-agent,
# coordinator-purple-agent and coordinator-echo-agent, with TAG's version). A layer of metadata
# over TAG; nothing is copied. The agents keep their state at a coordinator: --coordinator (or
# GREEN_AGENT_COORDINATOR, PURPLE_AGENT_COORDINATOR) names it.
agent_dir=$(mktemp -d "$context/agent.XXXXXX")
for agent in green_agent purple_agent echo_agent; do
  agent_tag="${TAG%:*}-${agent//_/-}:${TAG##*:}"
  printf '%s\n' "FROM $TAG" "HEALTHCHECK NONE" "EXPOSE 9009" "ENTRYPOINT [\"$agent\"]" \
    'CMD ["--host", "0.0.0.0", "--port", "9009"]' >"$agent_dir/Containerfile"
  "${ENGINE[@]}" build "${pull[@]}" -q -t "$agent_tag" -f "$agent_dir/Containerfile" "$agent_dir" >/dev/null
  echo "make_image: $agent_tag (entrypoint $agent)"
done
