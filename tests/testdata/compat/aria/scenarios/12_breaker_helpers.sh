# expected: original
# The breaker's inner helpers that callers use directly: _has_tier_changed (a second distinct
# from_tier in the escalation log) and _failures_at_current_tier (failures whose model equals the
# tier's number: none, since a failure's model is a name), before and after escalations, and for
# a task that is not there or no task at all.
id=$(aria_task_init "Speed up the import")
step sourced_breaker _has_tier_changed "$id"
step sourced_breaker _failures_at_current_tier "$id"
aria_task_increment_attempt "$id" > /dev/null
aria_task_record_failure "$id" "timeout after 30s"
aria_task_record_failure "$id" "timeout after 31s"
step sourced_breaker _failures_at_current_tier "$id"
aria_task_escalate "$id" "slow" > /dev/null
step sourced_breaker _has_tier_changed "$id"
aria_task_escalate "$id" "still slow" > /dev/null
step sourced_breaker _has_tier_changed "$id"
step sourced_breaker _failures_at_current_tier "$id"
step sourced_breaker _get_latest_error "$id"
step sourced_breaker _has_tier_changed 0123abcd
step sourced_breaker _failures_at_current_tier 0123abcd
step sourced_breaker _has_tier_changed ""
step sourced_breaker _failures_at_current_tier ""
