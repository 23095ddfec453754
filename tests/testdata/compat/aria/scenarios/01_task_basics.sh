# expected: original
# init (twice: the same id), get of known, unset and jq-path fields, set, attempts, tier.
id=$(aria_task_init "Fix the login form validation")
step aria_task_init "Fix the login form validation"
step aria_task_init ""
step aria_task_get "$id" task_id
step aria_task_get "$id" task_desc
step aria_task_get "$id" attempt_count
step aria_task_get "$id" model_tier
step aria_task_get "$id" created_at
step aria_task_get "$id" no_such_field
step aria_task_get "$id" failures
step aria_task_get "$id" "failures[0].error"
step aria_task_get "$id"
step aria_task_get "" task_id
step aria_task_get 00000000 task_id
step aria_task_increment_attempt "$id"
step aria_task_increment_attempt "$id"
step aria_task_get_tier "$id"
step aria_task_set "$id" owner alice
step aria_task_get "$id" owner
step aria_task_set "$id" owner "two words"
step aria_task_get "$id" owner
step aria_task_set "$id" attempt_count 007
step aria_task_get "$id" attempt_count
step aria_task_set "$id" model_tier 4
step aria_task_get_tier "$id"
step aria_task_set 00000000 owner bob
step aria_task_set "$id" "" bob
step aria_task_increment_attempt 00000000
step aria_task_get_tier 00000000
step aria_task_state "$id"
step aria_task_state 00000000
step aria_task_state ""
