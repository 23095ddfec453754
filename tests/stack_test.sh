#!/usr/bin/env bash
# The stack of docker-compose.yml in containers (docs/containers.md), driven from the host:
#   1. up: tokens, then the coordinator (waits for its health check), then green and purple;
#   2. a sample evaluation sent with coordctl to the published port; while the purple agent's
#      slow step runs, the coordinator's container is killed (`kill`, SIGKILL) and started again
#      on the same volume; the evaluation ends with the perfect score and 6 commands, each
#      counted once;
#   3. the containers' logs (stderr) are JSON lines, green's naming the evaluation;
#   4. `down` and `up` again: the evaluation is still there;
#   5. an agent image run with a platform's flags serves its card;
#   6. examples/scenarios/containers.toml run by coordctl scenario run: its agents in containers.
# Usage: stack_test.sh BIN_DIR [IMAGE]. Without IMAGE (ctest) the image is built from BIN_DIR
# (scripts/make_image.sh BIN_DIR, tagged coordinator:stack-test); `make stack-test` passes
# coordinator:latest, the image `make image` built. Exits 77 with "SKIPPED: <reason>" when no
# container engine works here. Everything it creates (containers, pod, network, volumes) is
# removed at exit, on failure too.
set -euo pipefail
BIN=$(cd "$1" && pwd)
IMAGE=${2:-}
cd "$(dirname "$0")/.."
# shellcheck source=tests/lib.sh
. tests/lib.sh  # free_port
source scripts/container_engine.sh

skip() { echo "SKIPPED: $*"; exit 77; }
fail() { echo "stack_test: FAIL: $*" >&2; exit 1; }
[[ ${#ENGINE[@]} -gt 0 ]] || skip "no container engine (apt-get install podman runc podman-compose debootstrap)"
[[ ${#COMPOSE[@]} -gt 0 ]] || skip "no compose tool for ${ENGINE[0]} (apt-get install podman-compose)"
# coordctl drives the stack from the host (and the coordinator of the scenario in containers runs
# there); the others go into the image when it is built here.
binaries=(coordctl coordinator)
[[ -n $IMAGE ]] || binaries+=(green_agent purple_agent echo_agent)
for b in "${binaries[@]}"; do
  [[ -x $BIN/$b ]] || fail "$BIN/$b is missing"
done
[[ ${ENGINE[0]} == podman ]] || skip "this test drives podman and podman-compose; ${ENGINE[0]} is not supported by it"
E=("${ENGINE[@]}")

built_image=
# The image and the per-agent images make_image.sh tags beside it.
agent_image() { echo "${IMAGE%:*}-${1//_/-}:${IMAGE##*:}"; }
remove_image() {
  [[ -n $built_image ]] || return 0
  local a
  for a in green_agent purple_agent echo_agent; do
    "${E[@]}" rmi "$(agent_image "$a")" >/dev/null 2>&1 || true
  done
  "${E[@]}" rmi "$built_image" >/dev/null 2>&1 || true
}
if [[ -z $IMAGE ]]; then
  IMAGE=coordinator:stack-test
  built_image=$IMAGE
  trap 'rc=$?; remove_image; exit $rc' EXIT
  log=$(mktemp)
  if ! IMAGE_TAG=$IMAGE ./scripts/make_image.sh "$BIN" >"$log" 2>&1; then
    # A host where podman cannot make or run the base image is one without a working engine;
    # a build that fails on a base image that runs is a failure.
    base=docker.io/library/debian:bookworm-slim
    if ! "${E[@]}" image inspect "$base" >/dev/null 2>&1; then
      why=$(tail -1 "$log"); rm -f "$log"
      skip "cannot make the base image debian:bookworm-slim here (debootstrap, podman import): $why"
    fi
    if ! why=$("${E[@]}" run --rm --network none "$base" true 2>&1); then
      rm -f "$log"
      skip "${E[0]} cannot run a container here: $(echo "$why" | tail -1)"
    fi
    cat "$log" >&2; rm -f "$log"
    fail "make_image.sh $BIN failed"
  fi
  rm -f "$log"
fi
"${E[@]}" image inspect "$IMAGE" >/dev/null 2>&1 || fail "no image $IMAGE (make image)"
if ! why=$("${E[@]}" run --rm --network none "$IMAGE" true 2>&1); then
  skip "${E[0]} cannot run a container here: $(echo "$why" | tail -1)"
fi

project=coordstack$$
tmp=$(mktemp -d)
cleanup() {
  local rc=$?
  if [[ $rc -ne 0 && $rc -ne 77 ]]; then
    for s in coordinator green purple; do
      echo "--- logs of $s (last 20 lines)" >&2
      "${E[@]}" logs --tail 20 "${project}_${s}_1" >&2 2>&1 || true
    done
    echo "--- compose (last 30 lines)" >&2
    tail -30 "$tmp/compose.log" >&2 2>/dev/null || true
  fi
  anonymous_volumes >>"$tmp/volumes"
  "${COMPOSE[@]}" -p "$project" down -v >/dev/null 2>&1 || true
  # What `down` leaves or a failed one may have left: containers, pod, the image's anonymous
  # /data volumes (VOLUME), the named volumes and the network of the project, and the image.
  "${E[@]}" ps -aq --filter "label=io.podman.compose.project=$project" \
    | xargs -r "${E[@]}" rm -f -v >/dev/null 2>&1 || true
  sort -u "$tmp/volumes" | xargs -r "${E[@]}" volume rm -f >/dev/null 2>&1 || true
  "${E[@]}" pod rm -f "pod_$project" >/dev/null 2>&1 || true
  for v in coordinator-data workspaces secrets; do
    "${E[@]}" volume rm -f "${project}_$v" >/dev/null 2>&1 || true
  done
  "${E[@]}" network rm -f "${project}_default" >/dev/null 2>&1 || true
  if [[ -n ${scenario_coordinator:-} ]]; then kill "$scenario_coordinator" 2>/dev/null || true; fi
  "${E[@]}" rm -f "$project-green" "$project-purple" >/dev/null 2>&1 || true
  remove_image
  rm -rf "$tmp"
  exit $rc
}
# The anonymous volumes of the project's containers (names without a project prefix).
anonymous_volumes() {
  "${E[@]}" ps -aq --filter "label=io.podman.compose.project=$project" \
    | xargs -r "${E[@]}" inspect -f '{{range .Mounts}}{{.Name}} {{end}}' 2>/dev/null \
    | tr ' ' '\n' | grep -E '^[0-9a-f]{64}$' || true
}
touch "$tmp/volumes"
trap cleanup EXIT
trap 'exit 1' INT TERM

# The coordinator's ports stay unbound between its container's kill and its start.
COORDINATOR_GRPC_PORT=$(free_port)
COORDINATOR_HTTP_PORT=$(free_port "$COORDINATOR_GRPC_PORT")
export COORDINATOR_IMAGE=$IMAGE COORDINATOR_GRPC_PORT COORDINATOR_HTTP_PORT
target=127.0.0.1:$COORDINATOR_GRPC_PORT

# The purple agent follows the sample script with a slow step before its answer (as
# tests/evaluation_process_test.cc does), from a tasks directory mounted over the image's. The
# step lasts 20 s: long enough that a loaded machine's polls below still see it as the last
# message, so that the kill comes mid-evaluation.
task=heap-overflow-record
slow_action="execute: sleep 20"
mkdir -p "$tmp/tasks/$task"
python3 - "examples/tasks/$task/purple_script.json" "$slow_action" >"$tmp/tasks/$task/purple_script.json" <<'EOF'
import json, sys
script = json.load(open(sys.argv[1]))
script.insert(2, sys.argv[2])
print(json.dumps(script))
EOF
chmod -R a+rX "$tmp"
cat >"$tmp/override.yml" <<EOF
services:
  purple:
    environment:
      PURPLE_AGENT_POLICY: script:/slow-tasks
    volumes:
      - $tmp/tasks:/slow-tasks:ro
EOF
# podman-compose's and podman's chatter (podman without systemd cannot schedule health check
# timers and says so; the checks are run here instead) goes to a log shown on failure.
compose() {
  "${COMPOSE[@]}" -p "$project" -f docker-compose.yml -f "$tmp/override.yml" "$@" \
    >>"$tmp/compose.log" 2>&1
}
ctr() { echo "${project}_$1_1"; }

wait_healthy() {
  local c=$1
  for _ in $(seq 120); do
    "${E[@]}" healthcheck run "$c" >/dev/null 2>&1 && return 0
    [[ $("${E[@]}" inspect -f '{{.State.Running}}' "$c" 2>/dev/null) == true ]] \
      || fail "$c is not running"
    sleep 1
  done
  fail "$c never became healthy"
}

# podman-compose 1.0 starts services in order but waits for no condition (depends_on), so the
# conditions docker-compose.yml states are waited for here, in the same order. (It also starts
# a service's dependencies again: `podman start` of a running container does nothing, and
# tokens does nothing once tokens.json exists.)
up() {
  compose up -d tokens
  [[ $("${E[@]}" wait "$(ctr tokens)") == 0 ]] || fail "the tokens service failed"
  compose up -d coordinator
  wait_healthy "$(ctr coordinator)"
  compose up -d green purple
  wait_healthy "$(ctr green)"
  wait_healthy "$(ctr purple)"
}

echo "stack_test: up (image $IMAGE, gRPC on $target)"
up
"${E[@]}" cp "$(ctr coordinator):/secrets/admin.token" "$tmp/admin.token"
coordctl() { "$BIN/coordctl" --target "$target" --timeout 10s --auth-token-file "$tmp/admin.token" "$@"; }
for agent in green purple; do
  for _ in $(seq 60); do
    coordctl agent list | grep -q "^$agent\b" && break
    sleep 1
  done
  coordctl agent list | grep -q "^$agent\b" || fail "$agent did not register"
done

context=eval-stack
task_json=$(coordctl send green "Task ID: $task" --context "$context" --json)
task_id=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["id"])' "$task_json")
echo "stack_test: evaluation $context, task $task_id; waiting for the slow step"
for _ in $(seq 240); do
  coordctl convo show "$context" --tail 1 2>/dev/null | grep -qF "$slow_action" && break
  sleep 0.5
done
if ! coordctl convo show "$context" --tail 1 | grep -qF "$slow_action"; then
  # What the evaluation did instead, for the failure's story.
  coordctl convo show "$context" >&2 || true
  coordctl agent list >&2 || true
  fail "the slow step never came"
fi

echo "stack_test: kill the coordinator's container mid-evaluation and start it again"
"${E[@]}" kill --signal KILL "$(ctr coordinator)" >/dev/null
"${E[@]}" wait "$(ctr coordinator)" >/dev/null || true
"${E[@]}" start "$(ctr coordinator)" >>"$tmp/compose.log" 2>&1
wait_healthy "$(ctr coordinator)"

done_json=$(coordctl watch "$task_id" --for 3m --json) || fail "the evaluation did not complete: $done_json"
check_evaluation() {
  coordctl context get "$context" --json | python3 -c '
import json, sys
c = json.load(sys.stdin)
count = int(c.get("command_count", c.get("commandCount", 0)))
status = c.get("status")
assert count == 6, f"command_count {count}, want 6 (each command counted once): {c}"
assert status == "CONTEXT_STATUS_COMPLETED", f"status {status}: {c}"
'
}
python3 - "$done_json" <<'EOF' || fail "wrong result: $done_json"
import json, sys
task = json.loads(sys.argv[1])
text = json.dumps(task)
assert "TASK_STATE_COMPLETED" in text, text
assert '\\"score\\":1.0000' in text, text
EOF
check_evaluation || fail "after the restart"
echo "stack_test: the evaluation completed with score 1.0 and 6 commands"

# Logs: JSON lines on the containers' stderr, the evaluation's context among them.
for s in coordinator green purple; do
  "${E[@]}" logs "$(ctr "$s")" 2>&1 >/dev/null | python3 -c '
import json, sys
lines = [l for l in sys.stdin.read().splitlines() if l.strip()]
assert lines, "no log lines"
for l in lines:
    json.loads(l)
assert sys.argv[1] in "\n".join(lines), "the evaluation is not in the logs"
' "$([[ $s == green ]] && echo "$context")" || fail "$s: its stderr is not JSON lines"
done
echo "stack_test: logs are JSON lines"

echo "stack_test: down, up again"
anonymous_volumes >>"$tmp/volumes"
compose down
up
check_evaluation || fail "after down and up"
echo "stack_test: the evaluation is still there"

# An agent's image as a platform runs it: nothing but the platform's flags after the image name;
# the card on the published port names --card-url.
echo "stack_test: an agent image on a platform's terms"
echo_port=$(free_port)
"${E[@]}" run -d --rm --name "${project}_platform_echo" -p "127.0.0.1:$echo_port:9009" \
  "$(agent_image echo_agent)" --host 0.0.0.0 --port 9009 --card-url http://echo.example:9009/ \
  >/dev/null || fail "cannot run $(agent_image echo_agent)"
card_ok=
for _ in $(seq 600); do  # 60 s at most
  if python3 - "$echo_port" <<'EOF' 2>/dev/null; then card_ok=1; break; fi
import json, sys, urllib.request
request = urllib.request.Request(f"http://127.0.0.1:{sys.argv[1]}/.well-known/agent-card.json",
                                 headers={"A2A-Version": "1.0"})
card = json.load(urllib.request.urlopen(request, timeout=2))
assert card["supportedInterfaces"][0]["url"] == "http://echo.example:9009/", card
EOF
  sleep 0.1
done
"${E[@]}" rm -f "${project}_platform_echo" >/dev/null 2>&1 || true
[[ -n $card_ok ]] || fail "$(agent_image echo_agent) served no card naming its --card-url"
echo "stack_test: $(agent_image echo_agent) serves its card on the platform's port"

# A platform scenario whose agents are containers (examples/scenarios/containers.toml, with this
# run's engine, images, ports and names): the runner on the host starts them with `podman run`,
# against a coordinator of its own on the host, follows the assessment to its score, and stops
# them; --rm leaves no container behind.
echo "stack_test: a scenario whose agents run in containers"
s_grpc=$(free_port)
s_http=$(free_port "$s_grpc")
green_port=$(free_port "$s_grpc" "$s_http")
purple_port=$(free_port "$s_grpc" "$s_http" "$green_port")
"$BIN/coordinator" --listen="127.0.0.1:$s_grpc" --http_listen="127.0.0.1:$s_http" \
  --data_dir="$tmp/scenario-data" >"$tmp/scenario-coordinator.log" 2>&1 &
scenario_coordinator=$!
for _ in $(seq 300); do
  "$BIN/coordctl" --target "127.0.0.1:$s_grpc" --timeout 2s health >/dev/null 2>&1 && break
  sleep 0.1
done
sed -e "s|^cmd = \"podman |cmd = \"${E[*]} |" \
  -e "s|coordinator-green-agent:latest|$(agent_image green_agent)|" \
  -e "s|coordinator-purple-agent:latest|$(agent_image purple_agent)|" \
  -e "s|9409|$green_port|g" -e "s|9419|$purple_port|g" \
  -e "s|127\.0\.0\.1:50051|127.0.0.1:$s_grpc|g" \
  -e "s|rca-green-c|$project-green|g" -e "s|rca-purple-c|$project-purple|g" \
  examples/scenarios/containers.toml >"$tmp/containers.toml"
if ! "$BIN/coordctl" --target "127.0.0.1:$s_grpc" scenario run "$tmp/containers.toml" \
    --gateway "http://127.0.0.1:$s_http" --logs "$tmp/scenario-logs" \
    --output "$tmp/scenario-result.json" --start-timeout 120s --for 300s \
    >"$tmp/scenario.out" 2>&1; then
  tail -30 "$tmp/scenario.out" "$tmp"/scenario-logs/*.log >&2 || true
  fail "the scenario in containers did not complete"
fi
python3 - "$tmp/scenario-result.json" <<'EOF' || fail "wrong scenario result: $(cat "$tmp/scenario-result.json")"
import json, sys
result = json.load(open(sys.argv[1]))
assert result["state"] == "completed", result
(a,) = result["assessments"]
assert a["state"] == "completed" and a["score"] == 1, a
EOF
left=
for _ in $(seq 100); do
  left=$("${E[@]}" ps -a --format '{{.Names}}' | grep -E "^$project-(green|purple)\$" || true)
  [[ -z $left ]] && break
  sleep 0.1
done
[[ -z $left ]] || fail "containers left after the run: $left"
kill "$scenario_coordinator" && wait "$scenario_coordinator" || true
scenario_coordinator=
echo "stack_test: the scenario's agents ran in containers; score 1, nothing left behind"

echo "stack_test: PASS"
