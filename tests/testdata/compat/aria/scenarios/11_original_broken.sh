# expected: ours
# Where the original is broken (docs/compat.md, "ARIA"): its force-escalate and break commands
# stop at `local` outside a function; a multi-line description or error, and a non-numeric tier,
# leave its state file unreadable. This transcript is ours, checked by hand.
id=$(aria_task_init "Make the importer idempotent")
step breaker force-escalate "$id" "same error twice"
step breaker force-escalate "$id"
step aria_task_get "$id" "escalation_log[1].reason"
step breaker force-escalate "$id"
step breaker force-escalate "$id"
step breaker force-escalate 00000000
step breaker break "$id" "a person should look"
step breaker break 00000000
step breaker status
step breaker cleanup "$id"
multi=$'first line\nsecond line'
step aria_task_init "$multi"
m=$(aria_task_init "$multi")
step aria_task_get "$m" task_desc
step aria_task_record_failure "$m" $'Traceback (most recent call last):\n  File "x.py", line 1\nValueError: bad'
step aria_task_record_failure "$m" $'Traceback (most recent call last):\n  File "y.py", line 9\nValueError: worse'
step aria_task_get_failure_context "$m"
step breaker check "$m"
step aria_task_record_failure "$m" ""
step aria_task_set "$m" model_tier abc
step aria_task_get_tier "$m"
step aria_task_list
step breaker log
# Tier 6: the script climbed to 7 (the coordinator's own force-escalate would stop at 6).
six=$(aria_task_init "Tier six task")
aria_task_set "$six" model_tier 6
step breaker force-escalate "$six" "from six"
step aria_task_get_tier "$six"
# Breaking a blocked task again keeps it blocked and rewrites the summary.
step sourced_breaker aria_circuit_break "$six" "first"
step sourced_breaker aria_circuit_break "$six" "second"
step breaker status
