# expected: original
# The list: empty, then tasks in id order with the first 50 bytes of their descriptions.
step aria_task_list
a=$(aria_task_init "short")
b=$(aria_task_init "A description that is much longer than fifty characters, so the list cuts it")
c=$(aria_task_init "Ünïcödé description: naïve café résumé, déjà vu")
aria_task_increment_attempt "$b" > /dev/null
aria_task_escalate "$c" "r" > /dev/null
step aria_task_list
aria_task_cleanup "$a"
aria_task_cleanup "$b"
aria_task_cleanup "$c"
step aria_task_list
