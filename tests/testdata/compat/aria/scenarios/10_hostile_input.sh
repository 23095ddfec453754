# expected: original
# Hostile single-line input: quotes, backslashes, shell syntax, printf formats, leading dashes,
# tabs, non-ASCII; jq paths that do not exist; fields that are not valid jq.
desc='Fix "quoted" \backslash $HOME `whoami` $(id) %s %d'
id=$(aria_task_init "$desc")
step aria_task_init "$desc"
step aria_task_get "$id" task_desc
step aria_task_init "--verbose -e -n"
dash=$(aria_task_init "--verbose -e -n")
step aria_task_get "$dash" task_desc
step aria_task_record_failure "$id" 'Error: "unterminated \string	with tab %n\n'
step aria_task_record_failure "$id" "--help"
step aria_task_escalate "$id" '-e \n not a newline'
step aria_task_get_failure_context "$id"
step aria_task_set "$id" note '{"not": "json"}'
step aria_task_get "$id" note
step aria_task_set "$id" note "-5"
step aria_task_get "$id" note
step aria_task_set "$id" note "12abc"
step aria_task_get "$id" note
step aria_task_get "$id" "a.b.c"
step aria_task_get "$id" "failures[99].error"
step aria_task_get "$id" "failures[0].error"
step aria_task_get "$id" "escalation_log[-1].reason"
step aria_task_get "$id" "..."
step aria_task_get "$id" "task_id)"
step aria_task_state "$id"
step aria_task_list
step breaker check "$id"
step breaker analyze "$id"
step breaker check "../../etc/passwd"
step breaker analyze '$(id)'
step breaker cleanup "$dash"
step aria_task_state "$dash"
