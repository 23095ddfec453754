# expected: original
# Bare "Error: " prefixes count as one error type; prefixes, containment; no loop; unknown task.
id=$(aria_task_init "Ship the export button")
aria_task_record_failure "$id" "Error: disk full"
aria_task_record_failure "$id" "Error: permission denied"
step breaker check "$id"
id2=$(aria_task_init "Second task")
aria_task_record_failure "$id2" "npm ERR! code ERESOLVE unable to resolve dependency tree"
aria_task_record_failure "$id2" "ERESOLVE"
step breaker check "$id2"
id3=$(aria_task_init "Third task")
aria_task_record_failure "$id3" "segfault in worker 3"
step breaker check "$id3"
step breaker analyze "$id3"
id4=$(aria_task_init "Fourth task")
step breaker analyze "$id4"
step breaker check 00000000
step breaker analyze 00000000
