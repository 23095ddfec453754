# expected: original
# The breaker's functions, sourced: forced escalation, circuit break with its summary, the
# status table, cleanup.
id=$(aria_task_init "Rewrite the scheduler")
aria_task_increment_attempt "$id" > /dev/null
aria_task_record_failure "$id" "AssertionError: expected 3 jobs, got 2"
aria_task_record_failure "$id" "AssertionError: expected 3 jobs, got 1"
step sourced_breaker aria_force_escalate "$id" "same error"
step sourced_breaker aria_force_escalate "$id"
step aria_task_get_tier "$id"
step aria_task_get "$id" "escalation_log[0].forced"
step sourced_breaker aria_loop_suggest_action "$id" repeated_error
step sourced_breaker aria_loop_suggest_action "$id" stuck_tier
step sourced_breaker aria_loop_suggest_action "$id" quality_gate_loop
step sourced_breaker aria_loop_suggest_action "$id" something
step sourced_breaker aria_circuit_break "$id" "needs a person"
step cat "${ARIA_BLOCKED_TASKS_DIR:-/tmp/aria-blocked-tasks}/$id-summary.txt"
step aria_task_get "$id" blocked
step aria_task_get "$id" block_reason
id2=$(aria_task_init "Second blocked task")
step sourced_breaker aria_circuit_break "$id2"
step breaker status
step breaker cleanup "$id"
step aria_task_state "$id"
step breaker status
step breaker cleanup "$id2"
step breaker status
