#!/usr/bin/env bash
# Seeds a coordinator for the console's browser test and screenshots (tests/console/run.sh):
#   seed.sh <coordctl> <host:port> <scratch dir>
# Two finished and scored evaluations and a running one (with an A2A task at the echo agent), a
# scenario run's two assessments,
# a run with one item held and one waiting, a retry task that the breaker blocked, and an agent
# registered at an address where nothing listens (the overview shows it unreachable).
set -euo pipefail
coordctl="$1"
target="$2"
work="$3"
c() { "$coordctl" --target "$target" "$@"; }

c context put eval-done --agent green --set external_task_id=django-11099 --set status=completed \
  --set purple_agent=purple-gpt --set phase=scored \
  --set 'score={"task_id":"django-11099","file_accuracy":1.0,"function_accuracy":0.5,"line_accuracy":0.75,"score":0.75}'
c convo append eval-done --role user --tokens 512 "Find the bug behind issue django-11099."
c convo append eval-done --role agent --tokens 96 "execute: grep -rn UsernameValidator django/"
c context command eval-done --exit-code 0 --duration 0.21s -- grep -rn UsernameValidator django/
c convo append eval-done --role agent --tokens 80 "execute: python -m pytest tests/auth_tests -q"
c context command eval-done --exit-code 1 --duration 4.8s -- python -m pytest tests/auth_tests -q
c convo append eval-done --role agent --tokens 40 "submit"

c context put eval-older --agent green --set external_task_id=django-11099 \
  --set status=completed --set purple_agent=purple-claude --set phase=scored \
  --set 'score={"task_id":"django-11099","score":0.5}'
c context command eval-older --exit-code 0 --duration 0.1s -- ls

c context put eval-run --agent green --set external_task_id=flask-4045 \
  --set purple_agent=purple-claude --set phase=running
c convo append eval-run --role user --tokens 480 "Find the bug behind issue flask-4045."
c convo append eval-run --role agent --tokens 64 "execute: ls src/flask"
c context command eval-run --exit-code 0 --duration 0.05s -- ls src/flask
c send echo "hello from the judge" --context eval-run --wait --for 20s
# Two assessments of the scenario run sc-demo (run.sh registered its agents), each in its
# shard's context; the judge's artifact is the JSON it was sent.
c send sc-demo.green_agent '{"score": 0.5, "shard": 0}' --context scenario-sc-demo-s0-r0 --wait --for 20s
c send sc-demo.green_agent '{"score": 1, "shard": 1}' --context scenario-sc-demo-s1-r0 --wait --for 20s
# Port 1 (tcpmux) on loopback: nothing listens there, the gateway's probe is refused.
c agent register ghost 127.0.0.1:1

cat >"$work/graph.json" <<'JSON'
{"feature": "widget-maker",
 "tasks": [
  {"id": "WM-001", "title": "Schema", "description": "Define the schema", "level": 1, "dependencies": []},
  {"id": "WM-002", "title": "Migrations", "description": "Write the migrations", "level": 1, "dependencies": []},
  {"id": "WM-003", "title": "API", "description": "Serve it", "level": 2, "dependencies": ["WM-001"]}
 ]}
JSON
c run import "$work/graph.json" --run-id run-widgets
lease="$(c run claim run-widgets --worker worker-a --ttl 1h | sed -n 's/.*"lease":"\([^"]*\)".*/\1/p' | head -n 1)"
if [ -n "$lease" ]; then
  c run checkpoint "$lease" --note "schema drafted"
fi

task="$(c task init "Fix the flaky login test")"
c task attempt "$task"
c task fail "$task" "ImportError: cannot import name 'login' from 'auth'"
c task attempt "$task"
c task fail "$task" "ImportError: cannot import name 'login' from 'auth'"
c breaker break "$task" "the same import error twice at one tier"
other="$(c task init "Add the pagination endpoint")"
c task attempt "$other"
c task escalate "$other" "tests time out"
