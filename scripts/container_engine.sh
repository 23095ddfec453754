# Sourced by the container scripts (make_image.sh, stack_test.sh): picks the container engine and
# its compose tool, and sets podman up for restricted hosts without touching the host's own
# configuration. Sets:
#   ENGINE   the engine command as an array: podman (preferred) or docker (when its daemon answers);
#            empty when there is none. CONTAINER_ENGINE=docker|podman chooses.
#   COMPOSE  the compose command as an array: podman-compose, or `docker compose`.
# For podman, CONTAINERS_CONF points at docker/containers.conf (runc, cgroupfs, no default
# ulimits; docs/containers.md) unless it is set already, and runc is also given with --runtime.
ENGINE=()
COMPOSE=()
_engine_repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
_engine=${CONTAINER_ENGINE:-}
if [[ -z $_engine ]]; then
  if command -v podman >/dev/null 2>&1; then
    _engine=podman
  elif command -v docker >/dev/null 2>&1 && docker info >/dev/null 2>&1; then
    _engine=docker
  fi
fi
case $_engine in
  podman)
    export CONTAINERS_CONF=${CONTAINERS_CONF:-$_engine_repo/docker/containers.conf}
    ENGINE=(podman)
    if _runc=$(command -v runc || { [[ -x /usr/sbin/runc ]] && echo /usr/sbin/runc; }); then
      ENGINE+=(--runtime "$_runc")
    fi
    if command -v podman-compose >/dev/null 2>&1; then COMPOSE=(podman-compose); fi
    ;;
  docker)
    ENGINE=(docker)
    if docker compose version >/dev/null 2>&1; then COMPOSE=(docker compose); fi
    ;;
esac
unset _engine _runc
