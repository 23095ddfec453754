#!/bin/bash
# Drop-in for ARIA's scripts/aria-task-state.sh, backed by the coordinator through coordctl.
#
# Source it as before (`source .../aria-task-state.sh`) and call the same functions:
# aria_task_init, aria_task_get, aria_task_set, aria_task_increment_attempt, aria_task_get_tier,
# aria_task_escalate, aria_task_record_failure, aria_task_get_failure_context, aria_task_cleanup,
# aria_task_state, aria_task_list. They print what the script printed and return what it
# returned; the state lives in the coordinator instead of /tmp/aria-task-<id>.json, so updates
# from concurrent callers are never lost. Differences are listed in docs/compat.md.
#
# Environment:
#   ARIA_COORDCTL    the coordctl binary (default: coordctl on PATH)
#   COORDCTL_TARGET  the coordinator (coordctl's own default: 127.0.0.1:50051)
# Needs jq, as the original did, for reading fields out of the state.

# The ladder of model tiers, tier 1 first (the coordinator's default ladder).
ARIA_TIER_MAP=(codex-mini gpt-5.1 codex codex-max claude-haiku claude-opus aria-thinking)

# Runs coordctl with the caller's arguments.
_aria_coordctl() {
    "${ARIA_COORDCTL:-coordctl}" "$@"
}

# Runs coordctl; an unknown task (exit 1) stays quiet, any other error is shown on stderr
# (the original had no such errors: a server it cannot reach is new). Keeps coordctl's status.
_aria_coordctl_quiet_not_found() {
    local err status=0
    err=$(_aria_coordctl "$@" 2>&1 >&3) || status=$?
    if [[ $status -gt 1 && -n "$err" ]]; then
        printf '%s\n' "$err" >&2
    fi
    return "$status"
} 3>&1

# The path the original kept a task's state in. Nothing is written there now; kept for
# callers that build paths from it.
_aria_task_file() {
    echo "/tmp/aria-task-${1}.json"
}

_aria_task_lock() {
    echo "/tmp/aria-task-${1}.lock"
}

# Whether bash's echo takes the description for its options (-n, -e, -E and their mixes), so
# that the original's `echo -n "$desc"` printed nothing: it hashed the empty string, and all such
# descriptions share one task id (e3b0c442) and one state, as here.
_aria_echo_swallows() {
    [[ "$1" =~ ^-[neE]+$ ]]
}

# The task id of a description: the first 8 hex digits of the SHA-256 of what the original's
# `echo -n` printed (the coordinator derives the same id).
_aria_task_hash() {
    if _aria_echo_swallows "$1"; then
        printf '' | sha256sum 2>/dev/null | cut -c1-8
    else
        printf '%s' "$1" | sha256sum 2>/dev/null | cut -c1-8
    fi
}

# The whole state as JSON in the state file's layout, or status 1 when the task is unknown.
_aria_task_json() {
    [[ -z "$1" ]] && return 1
    _aria_coordctl_quiet_not_found task state "$1"
}

aria_task_init() {
    [[ -z "$1" ]] && return 1
    if _aria_echo_swallows "$1"; then
        _aria_coordctl_quiet_not_found task init --id_text= -- "$1" || return 1
    else
        _aria_coordctl_quiet_not_found task init -- "$1" || return 1
    fi
    return 0
}

# Prints one field (a jq path after the dot, as before); nothing for an unset field.
aria_task_get() {
    local task_id="$1" field="$2" json
    if [[ -z "$task_id" || -z "$field" ]]; then return 1; fi
    json=$(_aria_task_json "$task_id") || return 1
    jq -r ".${field} // empty" <<< "$json" 2>/dev/null
}

# Sets one field; a value of only digits is stored as a number.
aria_task_set() {
    local task_id="$1" field="$2" value="$3"
    if [[ -z "$task_id" || -z "$field" ]]; then return 1; fi
    if [[ "$value" =~ ^[0-9]+$ ]]; then
        # As jq read the literal: leading zeros go (007 is 7).
        value="${value#"${value%%[!0]*}"}"
        value="${value:-0}"
    fi
    _aria_coordctl_quiet_not_found task set "$task_id" "$field" -- "$value" || return 1
    return 0
}

aria_task_increment_attempt() {
    [[ -z "$1" ]] && return 1
    _aria_coordctl_quiet_not_found task attempt "$1" || return 1
    return 0
}

aria_task_get_tier() {
    [[ -z "$1" ]] && return 1
    _aria_coordctl_quiet_not_found task tier "$1" || return 1
}

# The model of a tier, tiers below 1 and above 7 clamped.
_aria_task_tier_to_model() {
    local tier="${1:-1}"
    [[ -z "$tier" ]] && tier=1
    ((tier < 1)) && tier=1
    ((tier > 7)) && tier=7
    echo "${ARIA_TIER_MAP[tier - 1]}"
}

# Climbs one tier (capped at the top), logging the reason; prints the new tier.
aria_task_escalate() {
    [[ -z "$1" ]] && return 1
    _aria_coordctl_quiet_not_found task escalate "$1" -- "$2" || return 1
    return 0
}

aria_task_record_failure() {
    [[ -z "$1" ]] && return 1
    _aria_coordctl_quiet_not_found task fail "$1" -- "$2" || return 1
    return 0
}

# "Previous failures:" and one indented line per failure; nothing when there are none or the
# task is unknown.
aria_task_get_failure_context() {
    [[ -z "$1" ]] && return 1
    local status=0
    _aria_coordctl_quiet_not_found task failure-context "$1" || status=$?
    [[ $status -gt 1 ]] && return 1
    return 0
}

aria_task_cleanup() {
    [[ -z "$1" ]] && return 1
    local status=0
    _aria_coordctl_quiet_not_found task cleanup "$1" > /dev/null || status=$?
    [[ $status -gt 1 ]] && return 1
    return 0
}

# The whole state, laid out as jq prints it (as the state file was).
aria_task_state() {
    local json
    json=$(_aria_task_json "$1") || return 1
    jq . <<< "$json"
}

# One line per task, in id order: id | Attempts | Tier | the first 50 bytes of the description.
aria_task_list() {
    local listing line task_id json attempt tier desc count=0
    listing=$(_aria_coordctl task list) || return 1
    while IFS= read -r line; do
        [[ "$line" == "No active task states" || -z "$line" ]] && continue
        task_id="${line%% | *}"
        task_id="${task_id%"${task_id##*[! ]}"}"
        json=$(_aria_task_json "$task_id") || continue
        attempt=$(jq -r '.attempt_count // 0' <<< "$json")
        tier=$(jq -r '.model_tier // 1' <<< "$json")
        # Control characters (a newline in a description) as spaces: one task, one line.
        desc=$(jq -r '.task_desc // "" | gsub("[[:cntrl:]]"; " ")' <<< "$json" | cut -c1-50)
        printf "%-8s | Attempts: %d | Tier: %d | %s\n" "$task_id" "$attempt" "$tier" "$desc"
        count=$((count + 1))
    done <<< "$listing"
    if ((count == 0)); then
        echo "No active task states"
    fi
    return 0
}
