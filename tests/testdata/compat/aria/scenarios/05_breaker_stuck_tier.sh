# expected: original
# Three attempts with different errors and no escalation: stuck_tier; an escalation clears it.
id=$(aria_task_init "Migrate the user table")
for e in "disk full" "connection refused by db:5432" "lock wait timeout exceeded"; do
    aria_task_increment_attempt "$id" > /dev/null
    aria_task_record_failure "$id" "$e"
done
step breaker check "$id"
step breaker analyze "$id"
aria_task_escalate "$id" "stuck" > /dev/null
step breaker check "$id"
step breaker analyze "$id"
step breaker_debug check "$id"
