# expected: original
# Failures, the failure context, escalation up to the top tier, the tier names, cleanup.
id=$(aria_task_init "Add pagination to the orders API")
step aria_task_get_failure_context "$id"
step aria_task_increment_attempt "$id"
step aria_task_record_failure "$id" "TypeError: cannot read property 'id' of undefined"
step aria_task_increment_attempt "$id"
step aria_task_record_failure "$id" 'tests failed: 3 of 12 ("orders" suite)'
step aria_task_get_failure_context "$id"
step aria_task_escalate "$id" "two failures"
step aria_task_record_failure "$id" "timeout after 30s"
step aria_task_get_failure_context "$id"
step aria_task_get "$id" "failures[2].model"
step aria_task_get "$id" "escalation_log[0].reason"
step aria_task_escalate "$id"
step aria_task_escalate "$id" "again"
step aria_task_escalate "$id" "again"
step aria_task_escalate "$id" "again"
step aria_task_escalate "$id" "again"
step aria_task_escalate "$id" "past the top"
step aria_task_get_tier "$id"
step aria_task_state "$id"
step _aria_task_tier_to_model 0
step _aria_task_tier_to_model 1
step _aria_task_tier_to_model 5
step _aria_task_tier_to_model 7
step _aria_task_tier_to_model 12
step _aria_task_tier_to_model
step aria_task_escalate 00000000 "unknown"
step aria_task_escalate ""
step aria_task_record_failure 00000000 "x"
step aria_task_record_failure ""
step aria_task_get_failure_context 00000000
step aria_task_get_failure_context ""
step aria_task_cleanup "$id"
step aria_task_state "$id"
step aria_task_cleanup "$id"
step aria_task_cleanup ""
