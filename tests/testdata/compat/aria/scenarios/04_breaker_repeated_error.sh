# expected: original
# The same error type twice: a loop (repeated_error); analysis and the suggested action.
id=$(aria_task_init "Refactor the payment service")
step breaker check "$id"
aria_task_increment_attempt "$id" > /dev/null
aria_task_record_failure "$id" "TypeError: amount is undefined"
step breaker check "$id"
step breaker analyze "$id"
aria_task_increment_attempt "$id" > /dev/null
aria_task_record_failure "$id" "TypeError: currency is not a function"
step breaker check "$id"
step breaker analyze "$id"
aria_task_set "$id" model_tier 6
step breaker analyze "$id"
step breaker_debug check "$id"
