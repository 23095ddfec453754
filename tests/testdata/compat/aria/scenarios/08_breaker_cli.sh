# expected: original
# Usage: help, unknown commands, missing task ids, status with nothing blocked.
step breaker
step breaker help
step breaker --help
step breaker -h
step breaker frobnicate
step breaker check
step breaker analyze
step breaker force-escalate
step breaker break
step breaker cleanup
step breaker status
step breaker check ""
