# expected: original
# What the original's shell and jq do to some inputs, matched: a description that echo takes
# for its options (-n, -e, -E and their mixes) hashes as the empty string, so such tasks share
# one id and one state; a value of digits is a JSON number as jq reads it (a double: past 2^53 it
# rounds, and it may be written with an exponent; leading zeros go). Custom fields are set in
# name order: ours list them so (docs/compat.md).
step aria_task_init -n
step aria_task_init -e
step aria_task_init -neE
step aria_task_get e3b0c442 task_desc
step aria_task_increment_attempt e3b0c442
step aria_task_init "-n "
step aria_task_init -x
id=$(aria_task_init "digits")
aria_task_set "$id" big 99999999999999999999
aria_task_set "$id" exact 9007199254740992
aria_task_set "$id" huge 123456789012345678901234567890
aria_task_set "$id" n 12345
aria_task_set "$id" p16 10000000000000000
aria_task_set "$id" p17 100000000000000000
aria_task_set "$id" rounded 9007199254740993
aria_task_set "$id" z 007
for f in big exact huge n p16 p17 rounded z; do step aria_task_get "$id" "$f"; done
step aria_task_state "$id"
