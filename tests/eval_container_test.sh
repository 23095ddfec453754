#!/usr/bin/env bash
# Evaluations inside per-evaluation containers (docs/containers.md): the coordinator, the green
# agent and the purple agent from the build, each evaluation in its own container of the sample
# task image (docker/make_task_image.sh; built only when missing or changed), all at once:
#   1. an evaluation with the templates of docs/containers.md: score 1.0; its commands ran in the container
#      (the container's hostname, the image's marker file, the task's program built in the
#      image); the handle stored as the context's environment_handle; the container gone after;
#   2. a container killed in the middle of a command: the evaluation ends FAILED saying that its
#      environment stopped working; nothing left;
#   3. a cancelled evaluation (A2A CancelTask of green's task): CANCELED, its container gone;
#   4. bad templates, on a second green agent: a start that fails (an image that is not there),
#      a start that prints no id (FAILED, saying so; no container, the agent under test never
#      gets the task), a stop that fails twice (the score stands; the sweep stops it), a stop
#      that always fails (the score stands, the context says why, the record is kept);
# then
#   5. an evaluation cancelled with coordctl while green was killed (-9): green's restart removes
#      its container.
# At the end no container of this run is left but the one whose stop always fails (removed
# here), the green agents stop cleanly, and no log holds a sanitizer report (the sanitizer
# builds run this too). Usage: eval_container_test.sh BIN_DIR. Exits 77 with "SKIPPED: <reason>"
# when no container engine works here. Podman only (docker: skipped). Every container it
# started is removed at exit, on failure too (their names start with coord-evc<pid>-).
set -euo pipefail
BIN=$(cd "$1" && pwd)
cd "$(dirname "$0")/.."
source scripts/container_engine.sh
LIB_WHO=eval_container_test
source tests/lib.sh

skip() { echo "SKIPPED: $*"; exit 77; }
fail() { echo "eval_container_test: FAIL: $*" >&2; exit 1; }
say() { echo "eval_container_test: $*"; }
[[ ${#ENGINE[@]} -gt 0 ]] || skip "no container engine (apt-get install podman runc debootstrap)"
[[ ${ENGINE[0]} == podman ]] || skip "this test drives podman; ${ENGINE[0]} is not supported by it"
for b in coordinator green_agent purple_agent coordctl; do
  [[ -x $BIN/$b ]] || fail "$BIN/$b is missing"
done
E=("${ENGINE[@]}")
TASK_IMAGE=${TASK_IMAGE:-coordinator-task:latest}

tmp=$(mktemp -d)
pids=()
run=evc$$
cleanup() {
  local rc=$?
  stop_pids "${pids[@]}" 2>/dev/null || true
  if [[ $rc -ne 0 && $rc -ne 77 ]]; then dump_logs "$tmp"; fi
  # Every container of this run (their names start with coord-<run>-: {env_name}).
  "${E[@]}" ps -aq --filter "name=^coord-$run-" | xargs -r "${E[@]}" rm -f -t 0 >/dev/null 2>&1 || true
  rm -rf "$tmp"
  exit $rc
}
trap cleanup EXIT
trap 'exit 1' INT TERM

# The task image, reused when its inputs did not change.
if ! TASK_IMAGE=$TASK_IMAGE ./docker/make_task_image.sh >"$tmp/task-image.log" 2>&1; then
  base=docker.io/library/debian:bookworm-slim
  if ! "${E[@]}" image inspect "$base" >/dev/null 2>&1; then
    skip "cannot make the base image debian:bookworm-slim here (debootstrap, podman import): $(tail -1 "$tmp/task-image.log")"
  fi
  if ! why=$("${E[@]}" run --rm --network none "$base" true 2>&1); then
    skip "${E[0]} cannot run a container here: $(echo "$why" | tail -1)"
  fi
  cat "$tmp/task-image.log" >&2
  fail "docker/make_task_image.sh failed"
fi
say "$(tail -1 "$tmp/task-image.log")"
if ! why=$("${E[@]}" run --rm --network none "$TASK_IMAGE" true 2>&1); then
  skip "${E[0]} cannot run a container here: $(echo "$why" | tail -1)"
fi

# Task bundles (copies of the samples under other ids) and purple's scripts for each scenario.
tasks=$tmp/tasks
sample=examples/tasks/heap-overflow-record
bundle() {  # bundle <id> <script as a JSON list>
  mkdir -p "$tasks/$1"
  cp -r "$sample/src" "$sample/crash_report.txt" "$sample/ground_truth.json" "$tasks/$1/"
  echo "$2" >"$tasks/$1/purple_script.json"
}
answer=$(cat "$sample/purple_script.json")
# 1: three commands first that only the container can answer (its hostname, the image's marker,
# the task's program built in the image, which crashes: a failed command, the container alive).
bundle heap-overflow-record "$(python3 - "$answer" <<'EOF'
import json, sys
script = json.loads(sys.argv[1])
print(json.dumps(["execute: cat /etc/hostname", "execute: cat /etc/coordinator-task-image",
                  "execute: /opt/tasks/heap-overflow-record/program alpha:1 temperature:42"]
                 + script))
EOF
)"
# The slow step outlasts every step of this test before it is interrupted (killed, cancelled):
# under load the evaluations before step 5 take more than a minute (a 60 s sleep once ended by
# itself before step 3 cancelled it, and the evaluation failed instead).
slow='["execute: ls src", "execute: sleep 900", "submit"]'
bundle evc-dies "$slow"
bundle evc-cancel "$slow"
bundle evc-restart "$slow"
bundle evc-start-fails "$answer"
bundle evc-no-id "$answer"
bundle evc-stop-fails "$answer"
bundle evc-stop-always-fails "$answer"

grpc_port=$(free_port)
grpc=127.0.0.1:$grpc_port
http=127.0.0.1:$(free_port "$grpc_port")
coordctl() { "$BIN/coordctl" --target "$grpc" --timeout 10s "$@"; }
"$BIN/coordinator" --listen="$grpc" --http_listen="$http" --data_dir="$tmp/data" \
  2>"$tmp/coordinator.log" &
pids+=($!)
wait_for "$tmp/coordinator.log" "listening on" "${pids[0]}" coordinator >/dev/null
for _ in $(seq 100); do coordctl health >/dev/null 2>&1 && break; sleep 0.1; done

# The templates of docs/containers.md; on this host podman also needs runc (scripts/container_engine.sh).
P="${E[*]}"
start_green() {  # start_green <name> <log> [flags...]
  local name=$1 log=$2
  shift 2
  "$BIN/green_agent" --coordinator="$grpc" --name="$name" --tasks_dir="$tasks" \
    --workspaces_dir="$tmp/workspaces-$name" "$@" 2>>"$tmp/$log.log" &
  pids+=($!)
  wait_for "$tmp/$log.log" "registered with the coordinator" "$!" "$name" >/dev/null
}
green_flags=(
  --command_timeout=20m
  --env_start_template="$P run -d --rm --name {env_name} --network none -v {workspace}:/workspace $TASK_IMAGE sleep infinity"
  --exec_template="$P exec {container} {argv}"
  --env_stop_template="$P rm -f -t 0 {container}"
)
start_green green green "${green_flags[@]}"
green_pid=${pids[-1]}
# The second green: wrappers that misbehave for some tasks and run the same podman otherwise.
cat >"$tmp/start.sh" <<EOF
#!/bin/sh
# start.sh <task id> <env name> <workspace>
case \$1 in
  evc-start-fails) exec $P run -d --rm --pull=never --name "\$2" coordinator-task:no-such-tag sleep infinity ;;
  evc-no-id) echo "started nothing, printed nothing" >&2; exit 0 ;;
esac
exec $P run -d --rm --name "\$2" --network none -v "\$3:/workspace" $TASK_IMAGE sleep infinity
EOF
cat >"$tmp/stop.sh" <<EOF
#!/bin/sh
# stop.sh <task id> <container>
case \$1 in
  evc-stop-always-fails) echo "stop refused on purpose" >&2; exit 3 ;;
  evc-stop-fails)
    n=\$(cat "$tmp/stop-fails.count" 2>/dev/null || echo 0)
    echo \$((n + 1)) >"$tmp/stop-fails.count"
    if [ "\$n" -lt 2 ]; then echo "stop failed on purpose (\$((n + 1)))" >&2; exit 3; fi ;;
esac
exec $P rm -f -t 0 "\$2"
EOF
chmod +x "$tmp/start.sh" "$tmp/stop.sh"
start_green green-bad green-bad --purple_agent=purple-bad --env_sweep_interval=1s \
  --env_start_template="$tmp/start.sh {task_id} {env_name} {workspace}" \
  --exec_template="$P exec {container} {argv}" \
  --env_stop_template="$tmp/stop.sh {task_id} {container}"
for p in purple purple-bad; do
  "$BIN/purple_agent" --coordinator="$grpc" --name="$p" --policy="script:$tasks" \
    --green_agent="${p/purple/green}" 2>"$tmp/$p.log" &
  pids+=($!)
  wait_for "$tmp/$p.log" "registered with the coordinator" "$!" "$p" >/dev/null
done

# send <green> <task> <context>: prints green's task id.
send() {
  coordctl send "$1" "Task ID: $2" --context "$3" --json \
    | python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])'
}
# field <context> <python expression over c: the context as JSON, its field names in snake_case>
field() {
  coordctl context get "$1" --json | python3 -c '
import json, re, sys
c = {re.sub("[A-Z]", lambda m: "_" + m.group(0).lower(), k): v
     for k, v in json.load(sys.stdin).items()}
c.setdefault("labels", {})
print(eval(sys.argv[1]))' "$2"
}
gone() { ! "${E[@]}" container exists "$1"; }
wait_gone() {  # wait_gone <handle> <what>
  for _ in $(seq 100); do gone "$1" && return 0; sleep 0.1; done
  fail "$2: container $1 is still there"
}
no_record() {  # no_record <green name> <context>: green removed its environment record
  ! find "$tmp/workspaces-$1" -name environment.json -exec grep -l "\"$2\"" {} + 2>/dev/null | grep -q .
}
wait_no_record() {  # wait_no_record <green name> <context>
  for _ in $(seq 100); do no_record "$1" "$2" && return 0; sleep 0.1; done
  fail "$2: the environment record is still there"
}
wait_field() {  # wait_field <context> <expression> <value>: until field says <value>
  for _ in $(seq 100); do [[ $(field "$1" "$2") == "$3" ]] && return 0; sleep 0.1; done
  fail "$1: $2 is \"$(field "$1" "$2")\", not \"$3\""
}
wait_step() {  # wait_step <context> <text>: the agent under test's last action is <text>
  for _ in $(seq 200); do
    coordctl convo show "$1" --tail 1 2>/dev/null | grep -qF "$2" && return 0
    sleep 0.1
  done
  fail "$1: \"$2\" never came"
}

c_main=$run-main c_dies=$run-dies c_cancel=$run-cancel c_restart=$run-restart
c_start=$run-start-fails c_noid=$run-no-id c_stop=$run-stop-fails c_stop_always=$run-stop-always
say "starting 8 evaluations (coordinator on $grpc)"
t_main=$(send green heap-overflow-record "$c_main")
t_dies=$(send green evc-dies "$c_dies")
t_cancel=$(send green evc-cancel "$c_cancel")
send green evc-restart "$c_restart" >/dev/null
t_start=$(send green-bad evc-start-fails "$c_start")
t_noid=$(send green-bad evc-no-id "$c_noid")
t_stop=$(send green-bad evc-stop-fails "$c_stop")
t_stop_always=$(send green-bad evc-stop-always-fails "$c_stop_always")

# 1. The whole evaluation in its container.
out=$(coordctl watch "$t_main" --for 2m --json) || fail "the evaluation did not complete: $out"
grep -qF '\"score\":1.0000' <<<"$out" || fail "wrong score: $out"
handle=$(field "$c_main" 'c["environment_handle"]')
[[ $handle =~ ^[0-9a-f]{64}$ ]] || fail "environment_handle is \"$handle\", not a container id"
wait_field "$c_main" 'c["labels"].get("environment")' stopped
[[ $(field "$c_main" 'c["command_count"]') == 8 ]] || fail "$c_main: command count"
coordctl convo show "$c_main" --json >"$tmp/convo.json"
python3 - "$tmp/convo.json" "$handle" <<'EOF' || fail "the commands did not run in the container"
import json, sys
messages = json.load(open(sys.argv[1]))["messages"]
handle = sys.argv[2]
observed = {}
for action, answer in zip(messages, messages[1:]):
    if action["text"].startswith("execute: "):
        observed[action["text"][len("execute: "):]] = answer["text"]
hostname = observed["cat /etc/hostname"]
assert hostname.split("\n")[1].strip() == handle[:12], f"hostname {hostname!r}, container {handle}"
marker = observed["cat /etc/coordinator-task-image"]
assert "coordinator sample task image" in marker, marker
crash = observed["/opt/tasks/heap-overflow-record/program alpha:1 temperature:42"]
assert crash.startswith("exit code 1\n") and "AddressSanitizer: heap-buffer-overflow" in crash, crash
EOF
[[ ! -e /etc/coordinator-task-image ]] || fail "this host has /etc/coordinator-task-image: the check proves nothing"
wait_gone "$handle" "$c_main"
wait_no_record green "$c_main"
say "1. scored 1.0 in container ${handle:0:12} (its hostname, the image's files); the container is gone"

# 2. The container dies in the middle of a command.
wait_step "$c_dies" "execute: sleep 900"
dies=$(field "$c_dies" 'c["environment_handle"]')
"${E[@]}" kill "$dies" >/dev/null
out=$(coordctl watch "$t_dies" --for 1m --json) && fail "the evaluation whose container died completed: $out"
grep -qF "stopped working" <<<"$out" || fail "green's task does not say why: $out"
[[ $(field "$c_dies" 'c["status"]') == CONTEXT_STATUS_FAILED ]] || fail "$c_dies: not FAILED"
error=$(field "$c_dies" 'c["labels"]["error"]')
# podman exits 125 or 255, saying "no such container" or "container state improper".
[[ $error == "the evaluation's environment $dies stopped working: \`true\` through --exec_template exited "*": Error: "* ]] \
  || fail "$c_dies: error label \"$error\""
wait_gone "$dies" "$c_dies"
wait_no_record green "$c_dies"
say "2. a container killed mid-command: FAILED ($error)"

# 3. Cancelled by a client.
wait_step "$c_cancel" "execute: sleep 900"
cancel=$(field "$c_cancel" 'c["environment_handle"]')
python3 - "http://$http/agents/green" "$t_cancel" >"$tmp/cancel.json" <<'EOF' || fail "CancelTask failed"
import json, sys, urllib.request
body = {"jsonrpc": "2.0", "id": 1, "method": "CancelTask", "params": {"id": sys.argv[2]}}
request = urllib.request.Request(sys.argv[1], json.dumps(body).encode(),
                                 {"Content-Type": "application/json"})
print(urllib.request.urlopen(request, timeout=30).read().decode())
EOF
grep -q TASK_STATE_CANCELED "$tmp/cancel.json" || fail "CancelTask: $(cat "$tmp/cancel.json")"
wait_field "$c_cancel" 'c["status"]' CONTEXT_STATUS_CANCELED
wait_gone "$cancel" "$c_cancel"
wait_no_record green "$c_cancel"
say "3. cancelled: CANCELED, container ${cancel:0:12} gone"

# 4. Bad templates.
out=$(coordctl watch "$t_start" --for 1m --json) && fail "an evaluation without an environment completed"
grep -qF "cannot start the evaluation's environment: --env_start_template exited 125: Error: " <<<"$out" \
  || fail "the failed start is not explained: $out"
[[ $(field "$c_start" 'c["labels"].get("environment")') == "start failed" ]] || fail "$c_start: environment label"
[[ $(field "$c_start" '"purple_task" in c["labels"]') == False ]] || fail "$c_start: the task was sent"
out=$(coordctl watch "$t_noid" --for 1m --json) && fail "an evaluation without an environment completed"
grep -qF "printed no handle on stdout (it exited 0; stderr: started nothing, printed nothing)" <<<"$out" \
  || fail "the start without an id is not explained: $out"
for c in "$c_start" "$c_noid"; do
  [[ $(field "$c" 'c["status"]') == CONTEXT_STATUS_FAILED ]] || fail "$c: not FAILED"
  wait_no_record green-bad "$c"
done
say "4. a start that fails and one that prints no id: FAILED, saying so"
out=$(coordctl watch "$t_stop" --for 2m --json) || fail "a failed stop failed the evaluation: $out"
grep -qF '\"score\":1.0000' <<<"$out" || fail "wrong score: $out"
stop=$(field "$c_stop" 'c["environment_handle"]')
wait_gone "$stop" "$c_stop (the sweep)"
wait_no_record green-bad "$c_stop"
wait_field "$c_stop" 'c["labels"].get("environment")' stopped
grep -q "cannot stop the environment $stop: --env_stop_template exited 3: stop failed on purpose (2)" \
  "$tmp/green-bad.log" || fail "the failed stops are not logged"
out=$(coordctl watch "$t_stop_always" --for 2m --json) || fail "a failed stop failed the evaluation: $out"
always=$(field "$c_stop_always" 'c["environment_handle"]')
wait_field "$c_stop_always" 'c["labels"].get("environment")' "stop failed"
[[ $(field "$c_stop_always" 'c["labels"].get("environment_error")') \
  == "cannot stop $always: --env_stop_template exited 3: stop refused on purpose" ]] \
  || fail "$c_stop_always: environment_error label"
! no_record green-bad "$c_stop_always" || fail "$c_stop_always: the record of a running container is gone"
gone "$always" && fail "$c_stop_always: the container is gone though its stop always fails"
"${E[@]}" rm -f -t 0 "$always" >/dev/null
say "4. a stop that fails twice: scored, then the sweep stopped it; one that always fails: scored, labelled, kept on record"

# 5. Cancelled while green was down: its restart stops the container.
wait_step "$c_restart" "execute: sleep 900"
restart=$(field "$c_restart" 'c["environment_handle"]')
kill -KILL "$green_pid"
{ wait "$green_pid"; } 2>/dev/null || true
coordctl context put "$c_restart" --set status=canceled >/dev/null
"${E[@]}" container exists "$restart" || fail "$c_restart: the container went with green"
start_green green green-restarted "${green_flags[@]}"
wait_gone "$restart" "$c_restart (green's restart)"
wait_no_record green "$c_restart"
say "5. cancelled while green was down: green's restart stopped container ${restart:0:12}"

left=$("${E[@]}" ps -aq --filter "name=^coord-$run-")
[[ -z $left ]] || fail "containers left: $left"
# The agents stop cleanly (green's sweep ends with it); in a sanitizer build, without a report.
stop_pids "${pids[@]}"
pids=()
for log in green-restarted green-bad; do
  [[ $(tail -1 "$tmp/$log.log") == *'"stopped cleanly"'* ]] || fail "$log did not stop cleanly"
done
if grep -lE "ERROR: (Address|Leak|Thread)Sanitizer|runtime error:" "$tmp"/*.log; then
  fail "a sanitizer report in the logs above"
fi
say "PASS"
