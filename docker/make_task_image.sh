#!/usr/bin/env bash
# Builds the sample task image coordinator-task:latest (TASK_IMAGE names another tag) from
# docker/task-image.Dockerfile and the task bundles in examples/tasks (their src/,
# crash_report.txt and build.sh; never ground_truth.json or purple_script.json), only when it is
# missing or its inputs changed: the image carries the digest of its build context as the label
# coordinator.task-image.digest. `make task-image` runs it; tests/eval_container_test.sh too.
# Base image: debian:bookworm-slim, made from debootstrap when missing (scripts/make_image.sh
# --base); nothing is pulled from a registry, the build reaches only Debian's archive (apt-get).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/container_engine.sh
TAG=${TASK_IMAGE:-coordinator-task:latest}
LABEL=coordinator.task-image.digest
if [[ ${#ENGINE[@]} -eq 0 ]]; then
  echo "make_task_image: no container engine: install podman (apt-get install podman runc) or docker" >&2
  exit 1
fi

context=$(mktemp -d)
trap 'rm -rf "$context"' EXIT
for bundle in examples/tasks/*/; do
  id=$(basename "$bundle")
  mkdir -p "$context/tasks/$id"
  cp -r "$bundle/src" "$bundle/crash_report.txt" "$context/tasks/$id/"
  [[ ! -f $bundle/build.sh ]] || cp "$bundle/build.sh" "$context/tasks/$id/"
done
cp docker/task-image.Dockerfile "$context/Dockerfile"
digest=$(cd "$context" && find . -type f -print0 | LC_ALL=C sort -z | xargs -0 sha256sum \
  | sha256sum | cut -c1-16)

# One build at a time on this host (two test runs may want it together).
exec 9>"${TMPDIR:-/tmp}/coordinator-task-image.lock"
flock -w 900 9
have() {
  "${ENGINE[@]}" image inspect -f "{{index .Config.Labels \"$LABEL\"}}" "$TAG" 2>/dev/null || true
}
if [[ $(have) == "$digest" ]]; then
  echo "make_task_image: $TAG is up to date ($LABEL=$digest)"
  exit 0
fi
./scripts/make_image.sh --base
old=$("${ENGINE[@]}" image inspect -f '{{.Id}}' "$TAG" 2>/dev/null || true)
pull=()
[[ ${ENGINE[0]} == podman ]] && pull=(--pull=never)
echo "make_task_image: ${ENGINE[0]} build -t $TAG ($LABEL=$digest)"
start=$(date +%s)
"${ENGINE[@]}" build "${pull[@]}" --label "$LABEL=$digest" -t "$TAG" "$context"
echo "make_task_image: built $TAG in $(( $(date +%s) - start )) s"
# The image it replaces, unless a container still uses it.
if [[ -n $old && $old != $("${ENGINE[@]}" image inspect -f '{{.Id}}' "$TAG") ]]; then
  "${ENGINE[@]}" rmi "$old" >/dev/null 2>&1 || true
fi
