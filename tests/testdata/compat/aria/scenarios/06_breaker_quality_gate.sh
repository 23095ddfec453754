# expected: original
# The same quality-gate failure twice, then a different last error: quality_gate_loop.
id=$(aria_task_init "Tidy the CSS of the dashboard")
aria_task_increment_attempt "$id" > /dev/null
aria_task_record_failure "$id" "Quality gate failed: eslint found 4 problems"
aria_task_increment_attempt "$id" > /dev/null
aria_task_record_failure "$id" "Quality gate failed: eslint found 4 problems"
aria_task_escalate "$id" "qg" > /dev/null
aria_task_record_failure "$id" "build timed out"
step breaker check "$id"
step breaker analyze "$id"
