#!/bin/bash
# Drop-in for ARIA's scripts/aria-iteration-breaker.sh, backed by the coordinator through
# coordctl: loop detection (repeated error, stuck tier, quality-gate loop), forced escalation,
# circuit breaking with a summary for a person, and the blocked-task registry.
#
# Run it with the same commands (check, analyze, force-escalate, break, status, cleanup, log,
# help) or source it for the same functions (aria_loop_check, aria_loop_analyze,
# aria_loop_suggest_action, aria_force_escalate, aria_circuit_break, aria_iteration_status,
# aria_iteration_cleanup). The loop rules here are the script's own, so that outputs match it
# byte for byte; `coordctl breaker` applies the coordinator's wider rules
# (docs/retry-and-breaker.md). The blocked registry is the coordinator's; the summary text is
# still written to <blocked dir>/<id>-summary.txt for hooks that read it. Differences, and the
# original's bugs that are not reproduced, are listed in docs/compat.md.
#
# Environment:
#   ARIA_COORDCTL, COORDCTL_TARGET  as for aria-task-state.sh
#   ARIA_BREAKER_DEBUG=1            debug lines on stderr
#   ARIA_BLOCKED_TASKS_DIR          where summaries go (default /tmp/aria-blocked-tasks)
#   ARIA_BREAKER_VAR_DIR            where the log goes (default /tmp/claude_vars)

_aria_breaker_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
if ! source "$_aria_breaker_dir/aria-task-state.sh" 2>/dev/null; then
    echo "Error: aria-task-state.sh not found" >&2
    exit 2
fi
# The original required ~/.claude/scripts/aria-config.sh; nothing here needs it, but a
# caller's settings in it still apply.
if [[ -f ~/.claude/scripts/aria-config.sh ]]; then
    # shellcheck source=/dev/null
    source ~/.claude/scripts/aria-config.sh 2>/dev/null || true
fi

# The original's colour variables, all of them: callers that source the script may use them.
RED='\033[0;31m'
GREEN='\033[0;32m'
YELLOW='\033[1;33m'
BLUE='\033[0;34m'
# shellcheck disable=SC2034
CYAN='\033[0;36m'
MAGENTA='\033[0;35m'
NC='\033[0m'

# The script's thresholds.
LOOP_SAME_ERROR_COUNT=2
LOOP_NO_TIER_CHANGE_ATTEMPTS=3
LOOP_QG_FAIL_REPEAT=2

BLOCKED_TASKS_DIR="${ARIA_BLOCKED_TASKS_DIR:-/tmp/aria-blocked-tasks}"
VAR_DIR="${ARIA_BREAKER_VAR_DIR:-/tmp/claude_vars}"
ITERATION_BREAKER_LOG="$VAR_DIR/aria-iteration-breaker.log"
mkdir -p "$VAR_DIR" "$BLOCKED_TASKS_DIR"

# One log line in the log file, and a coloured one on stderr.
_breaker_log() {
    local level="$1"
    shift
    local msg="$*" symbol colour
    printf '[%s] [%s] %s\n' "$(date '+%Y-%m-%d %H:%M:%S')" "$level" "$msg" \
        >> "$ITERATION_BREAKER_LOG" 2>/dev/null || true
    case "$level" in
        INFO) colour="$BLUE" symbol="ℹ" ;;
        SUCCESS) colour="$GREEN" symbol="✓" ;;
        WARN) colour="$YELLOW" symbol="⚠" ;;
        ERROR) colour="$RED" symbol="✗" ;;
        ALERT) colour="$MAGENTA" symbol="🔄" ;;
        *) return 0 ;;
    esac
    # echo -e, as the original: backslash escapes in the message are interpreted.
    echo -e "${colour}${symbol} ${msg}${NC}" >&2
}

_breaker_debug() {
    if [[ "${ARIA_BREAKER_DEBUG:-0}" == "1" ]]; then
        _breaker_log INFO "[DEBUG] $*"
    fi
}

# The error type of a text: "<Letters>Error: " at the start of its first line that has one
# (a bare "Error: " counts), or nothing.
_breaker_error_type() {
    grep -m1 -oE '^[A-Za-z]*Error: ' <<< "$1" || true
}

# Status 0 when two error texts count as the same error: equal, equal in their first 50
# characters, one inside the other, or of the same error type.
_error_similarity() {
    local a="$1" b="$2"
    [[ "$a" == "$b" ]] && return 0
    [[ "${a:0:50}" == "${b:0:50}" ]] && return 0
    [[ "$a" == *"$b"* || "$b" == *"$a"* ]] && return 0
    local type_a type_b
    type_a=$(_breaker_error_type "$a")
    type_b=$(_breaker_error_type "$b")
    [[ -n "$type_a" && "$type_a" == "$type_b" ]] && return 0
    return 1
}

# The failures' error texts, each ended by a NUL (so a text may hold newlines).
_breaker_errors() {
    jq -j '.failures[] | (.error // empty) | ., "\u0000"' <<< "$1" 2>/dev/null
}

# How many recorded errors of the state `json` are similar to `error`.
_breaker_similar_count() {
    local json="$1" error="$2" other count=0
    while IFS= read -r -d '' other; do
        if _error_similarity "$other" "$error"; then
            count=$((count + 1))
        fi
    done < <(_breaker_errors "$json")
    echo "$count"
}

_breaker_latest_error() {
    jq -r '.failures[-1] | .error // empty' <<< "$1" 2>/dev/null
}

# Kept for callers of the original's helpers.
_count_error_occurrences() {
    local json
    json=$(_aria_task_json "$1" 2>/dev/null) || return 0
    _breaker_similar_count "$json" "$2"
}

_get_latest_error() {
    local json
    json=$(_aria_task_json "$1" 2>/dev/null) || return 1
    _breaker_latest_error "$json"
}

# Status 0 when the escalation log holds more than one distinct from_tier (as the original
# counts a tier change); 1 otherwise, and for a task that is not there.
_has_tier_changed() {
    local json tiers
    [[ -z "$1" ]] && return 1
    json=$(_aria_task_json "$1" 2>/dev/null) || return 1
    tiers=$(jq -r '.escalation_log[] | .from_tier' <<< "$json" 2>/dev/null | sort -u | wc -l)
    [[ $tiers -gt 1 ]]
}

# Prints the failures the original counts as "at the current tier": those whose model equals
# the tier's number. A failure's model is a name, so that is 0 for every task, as the original
# prints. Nothing for a task that is not there (status 0, as the original).
_failures_at_current_tier() {
    local json tier
    [[ -z "$1" ]] && return 0
    json=$(_aria_task_json "$1" 2>/dev/null) || return 0
    tier=$(jq -r '.model_tier // empty' <<< "$json" 2>/dev/null)
    jq --arg tier "$tier" '[.failures[] | select(.model == $tier)] | length' <<< "$json" 2>/dev/null
}

# Status 0 when the failures mentioning "Quality gate" repeat the same check
# (LOOP_QG_FAIL_REPEAT times like the first of them); prints quality_gate_loop then.
_breaker_qg_loop() {
    local json="$1" text first="" total=0 same=0
    local -a texts=()
    while IFS= read -r -d '' text; do
        if [[ "$text" == *"Quality gate"* ]]; then
            texts+=("$text")
        fi
    done < <(_breaker_errors "$json")
    total=${#texts[@]}
    ((total >= LOOP_QG_FAIL_REPEAT)) || return 1
    first="${texts[0]}"
    for text in "${texts[@]}"; do
        if _error_similarity "$text" "$first"; then
            same=$((same + 1))
        fi
    done
    ((same >= LOOP_QG_FAIL_REPEAT)) || return 1
    echo "quality_gate_loop"
    return 0
}

_analyze_qg_failures() {
    local json
    json=$(_aria_task_json "$1" 2>/dev/null) || return 0
    _breaker_qg_loop "$json"
}

# Status 0 (a loop) or 1 (none, or an unknown task); says on stderr which rule fired.
aria_loop_check() {
    local task_id="$1" json latest count attempts escalations
    [[ -z "$task_id" ]] && return 1
    json=$(_aria_task_json "$task_id") || return 1
    _breaker_debug "Checking for loops in task $task_id"

    latest=$(_breaker_latest_error "$json")
    if [[ -n "$latest" ]]; then
        count=$(_breaker_similar_count "$json" "$latest")
        if ((count >= LOOP_SAME_ERROR_COUNT)); then
            _breaker_log ALERT "Loop detected: Same error appearing $count times"
            return 0
        fi
    fi

    attempts=$(jq -r '.attempt_count // 0' <<< "$json")
    escalations=$(jq -r '.escalation_log | length' <<< "$json")
    if ((attempts >= LOOP_NO_TIER_CHANGE_ATTEMPTS && escalations == 0)); then
        _breaker_log ALERT "Loop detected: $attempts attempts without tier change"
        return 0
    fi

    if _breaker_qg_loop "$json" > /dev/null; then
        _breaker_log ALERT "Loop detected: Quality gate failing on same check repeatedly"
        return 0
    fi

    _breaker_debug "No loop detected for task $task_id"
    return 1
}

# The first pattern that fits the state `json`, in the script's order: repeated_error,
# stuck_tier (never escalated), quality_gate_loop; else unknown.
_breaker_pattern() {
    local json="$1" latest count attempts escalations
    latest=$(_breaker_latest_error "$json")
    count=$(_breaker_similar_count "$json" "$latest")
    attempts=$(jq -r '.attempt_count // 0' <<< "$json")
    escalations=$(jq -r '.escalation_log | length' <<< "$json")
    if ((count >= LOOP_SAME_ERROR_COUNT)); then
        echo "repeated_error"
    elif ((escalations == 0 && attempts >= LOOP_NO_TIER_CHANGE_ATTEMPTS)); then
        echo "stuck_tier"
    elif _breaker_qg_loop "$json" > /dev/null; then
        echo "quality_gate_loop"
    else
        echo "unknown"
    fi
}

# The JSON string of $1.
_breaker_json_string() {
    jq -n --arg s "$1" '$s'
}

# The loop analysis as JSON, in the original's layout and keys.
aria_loop_analyze() {
    local task_id="$1" json
    [[ -z "$task_id" ]] && return 1
    json=$(_aria_task_json "$task_id") || return 1
    _breaker_log INFO "Analyzing loop pattern for task $task_id"

    local desc attempts tier latest count escalations pattern
    desc=$(jq -r '.task_desc // ""' <<< "$json")
    attempts=$(jq -r '.attempt_count // 0' <<< "$json")
    tier=$(jq -r '.model_tier // 1' <<< "$json")
    latest=$(_breaker_latest_error "$json")
    count=$(_breaker_similar_count "$json" "$latest")
    escalations=$(jq -r '.escalation_log | length' <<< "$json")
    pattern=$(_breaker_pattern "$json")

    # current_model holds the tier number, as the original's did.
    printf '{\n'
    printf '  "task_id": "%s",\n' "$task_id"
    printf '  "task_desc": %s,\n' "$(_breaker_json_string "$desc")"
    printf '  "pattern_type": "%s",\n' "$pattern"
    printf '  "attempt_count": %s,\n' "$attempts"
    printf '  "current_tier": %s,\n' "$tier"
    printf '  "current_model": "%s",\n' "$tier"
    printf '  "escalations_done": %s,\n' "$escalations"
    printf '  "repeated_error_count": %s,\n' "$count"
    printf '  "latest_error": %s,\n' "$(_breaker_json_string "$latest")"
    printf '  "analysis_timestamp": "%s",\n' "$(date +%s)"
    printf '  "suggested_action": "%s"\n' "$(aria_loop_suggest_action "$task_id" "$pattern")"
    printf '}\n'
    return 0
}

# The next step for a pattern, by the task's tier (below 6: escalate; else a person).
aria_loop_suggest_action() {
    local task_id="$1" pattern="$2" tier
    [[ -z "$task_id" ]] && return 1
    tier=$(aria_task_get_tier "$task_id" 2>/dev/null) || tier=0
    case "$pattern" in
        repeated_error)
            if ((tier < 6)); then
                echo "Force escalate 2 tiers (skip ineffective middle tier)"
            else
                echo "HUMAN_INTERVENTION_REQUIRED: Already at high tier, fundamental issue"
            fi
            ;;
        stuck_tier)
            if ((tier < 6)); then
                echo "Escalate to higher tier - current tier not solving problem"
            else
                echo "HUMAN_INTERVENTION_REQUIRED: Stuck at max tier"
            fi
            ;;
        quality_gate_loop)
            echo "HUMAN_INTERVENTION_REQUIRED: Quality gate fundamentally broken, needs code review"
            ;;
        *)
            echo "Unknown pattern - human review recommended"
            ;;
    esac
}

# Jumps two tiers (capped at 7) and prints the new tier, or prints HUMAN_INTERVENTION_REQUIRED
# when the task is already at tier 7.
aria_force_escalate() {
    local task_id="$1" reason="${2:-Loop detected, forcing escalation}" tier
    [[ -z "$task_id" ]] && return 1
    tier=$(aria_task_get_tier "$task_id") || return 1
    _breaker_log WARN "Force escalating task $task_id: $reason"
    if ((tier >= 7)); then
        echo "HUMAN_INTERVENTION_REQUIRED"
        return 0
    fi
    if ((tier == 6)); then
        # The coordinator's ForceEscalate stops one tier below the top and asks for a person;
        # the script still climbed to 7. A plain escalation does that (without "forced").
        _aria_coordctl_quiet_not_found task escalate "$task_id" -- "$reason" || return 1
        return 0
    fi
    _aria_coordctl_quiet_not_found breaker force-escalate "$task_id" -- "$reason" ||
        return 1
    return 0
}

# The summary for a person, in the original's layout.
_generate_human_summary() {
    local task_id="$1" reason="$2" analysis="$3" rule
    local desc pattern attempts tier error action
    desc=$(jq -r '.task_desc // ""' <<< "$analysis")
    pattern=$(jq -r '.pattern_type // "unknown"' <<< "$analysis")
    attempts=$(jq -r '.attempt_count // 0' <<< "$analysis")
    tier=$(jq -r '.current_tier // 0' <<< "$analysis")
    error=$(jq -r '.latest_error // ""' <<< "$analysis")
    action=$(jq -r '.suggested_action // ""' <<< "$analysis")
    rule=$(printf '═%.0s' {1..79})
    printf '%s\nARIA ITERATION BREAKER - TASK BLOCKED\n%s\n\n' "$rule" "$rule"
    printf 'Task ID: %s\nBlocked At: %s\n\n' "$task_id" "$(date '+%Y-%m-%d %H:%M:%S')"
    printf 'Task Description:\n  %s\n\n' "$desc"
    printf 'Loop Pattern: %s\nAttempts: %s\nCurrent Tier: %s\nBlocked Reason: %s\n\n' \
        "$pattern" "$attempts" "$tier" "$reason"
    printf '%s\nREPEATED ERROR\n%s\n\n%s\n\n' "$rule" "$rule" "$error"
    printf '%s\nSUGGESTED ACTION\n%s\n\n%s\n\n' "$rule" "$rule" "$action"
    printf '%s\nNEXT STEPS\n%s\n\n' "$rule" "$rule"
    printf '%s\n' \
        "1. Review the task description and error message above" \
        "2. Identify the root cause (not a retry issue)" \
        "3. One of:" \
        "   a) Fix the underlying code/requirements and restart" \
        "   b) Escalate to human review if fundamental blocker" \
        "   c) Queue task for later when related issues are resolved" \
        "" \
        "4. When ready, cleanup this task:" \
        "   aria-iteration-breaker.sh cleanup $task_id" \
        "" \
        "$rule"
}

# Blocks the task in the coordinator's registry, writes the summary file, prints its path.
aria_circuit_break() {
    local task_id="$1" reason="${2:-Circuit breaker triggered}" analysis summary_file
    [[ -z "$task_id" ]] && return 1
    _aria_task_json "$task_id" > /dev/null || return 1
    _breaker_log ERROR "Circuit breaker activated for task $task_id"
    analysis=$(aria_loop_analyze "$task_id" 2>/dev/null) || analysis="{}"
    # A task blocked again stays blocked (the coordinator answers ALREADY_EXISTS); the script
    # added a second registry entry, we write the summary again.
    local err
    if ! err=$(_aria_coordctl breaker break "$task_id" -- "$reason" 2>&1 > /dev/null) &&
        [[ "$err" != *ALREADY_EXISTS* ]]; then
        printf '%s\n' "$err" >&2
        return 1
    fi
    summary_file="$BLOCKED_TASKS_DIR/${task_id}-summary.txt"
    _generate_human_summary "$task_id" "$reason" "$analysis" > "$summary_file"
    echo "$summary_file"
    return 0
}

# The blocked tasks, one line each, with the original's header and footer.
aria_iteration_status() {
    local rule listing line task_id json pattern
    local -a ids=()
    local -A entries=()
    rule=$(printf '═%.0s' {1..79})
    printf 'ARIA Iteration Breaker Status\n%s\n\n' "$rule"
    listing=$(_aria_coordctl breaker status) || return 1
    while IFS= read -r line; do
        [[ "$line" == "No blocked tasks" || -z "$line" ]] && continue
        task_id="${line%% | *}"
        task_id="${task_id%"${task_id##*[! ]}"}"
        ids+=("$task_id")
        entries[$task_id]="$line"
    done <<< "$listing"
    if ((${#ids[@]} == 0)); then
        echo "No blocked tasks"
        return 0
    fi
    echo "Blocked Tasks: ${#ids[@]}"
    printf '%s\n' "$(printf '─%.0s' {1..79})"
    for task_id in "${ids[@]}"; do
        if ! json=$(_aria_task_json "$task_id"); then
            # In the registry without retry state (imported from a blocked.json that outlived
            # the state file): the registry's values at the break, as the original showed them.
            line="${entries[$task_id]}"
            [[ "$line" =~ \|\ Pattern:\ ([^ ]*)\ \|\ Attempts:\ ([0-9]+)\ \|\ Tier:\ ([0-9]+) ]] ||
                continue
            printf '%s | Attempts: %s | Tier: %s | Pattern: %s\n' "$task_id" \
                "${BASH_REMATCH[2]}" "${BASH_REMATCH[3]}" "${BASH_REMATCH[1]}"
            continue
        fi
        pattern=$(_breaker_pattern "$json")
        printf '%s | Attempts: %s | Tier: %s | Pattern: %s\n' "$task_id" \
            "$(jq -r '.attempt_count // 0' <<< "$json")" "$(jq -r '.model_tier // 1' <<< "$json")" \
            "$pattern"
    done | column -t -s '|'
    printf '\nSummary files in: %s\n\n' "$BLOCKED_TASKS_DIR"
}

# Unblocks the task, removes its summary and its retry state.
aria_iteration_cleanup() {
    local task_id="$1"
    [[ -z "$task_id" ]] && return 1
    _aria_coordctl breaker cleanup "$task_id" > /dev/null 2>&1 || true
    rm -f "$BLOCKED_TASKS_DIR/${task_id}-summary.txt" 2>/dev/null
    aria_task_cleanup "$task_id" 2>/dev/null || true
    _breaker_log SUCCESS "Cleaned up blocked task $task_id"
    return 0
}

_print_help() {
    cat << 'HELP'
ARIA Iteration Breaker - Loop detection and circuit breaker

Usage:
  aria-iteration-breaker.sh <command> [arguments]

Commands:
  check <task_id>          Check if task is in a loop
  analyze <task_id>        Deep analysis of loop pattern (JSON output)
  force-escalate <task_id> Force escalation, jumping 2 tiers
  break <task_id>          Activate circuit breaker for task
  status                   Show all blocked tasks
  cleanup <task_id>        Remove task from blocked list
  help                     Show this help message

Examples:
  # Check if task is stuck
  aria-iteration-breaker.sh check abc12345

  # Analyze the problem
  aria-iteration-breaker.sh analyze abc12345 | jq .

  # Force escalation (jump 2 tiers)
  aria-iteration-breaker.sh force-escalate abc12345 "Same error repeating"

  # Full circuit break
  aria-iteration-breaker.sh break abc12345 "Fundamental issue detected"

  # View all blocked tasks
  aria-iteration-breaker.sh status

  # Clean up when task is fixed
  aria-iteration-breaker.sh cleanup abc12345

Output:
  - Loop detection returns 0 (loop found) or 1 (no loop)
  - Analysis returns JSON with pattern details
  - Circuit break generates human-readable summary file
  - Blocked tasks directory: $BLOCKED_TASKS_DIR

Environment:
  ARIA_BREAKER_DEBUG=1     Enable debug output

HELP
}

# Exits 1 with the original's message when the command's task id is missing.
_breaker_need_task_id() {
    if [[ -z "${2:-}" ]]; then
        echo "Error: task_id required for '$1' command" >&2
        exit 1
    fi
}

_breaker_main() {
    local command="${1:-help}" result summary_file status=0
    shift || true
    case "$command" in
        check)
            _breaker_need_task_id check "${1:-}"
            aria_loop_check "$1" || status=$?
            exit "$status"
            ;;
        analyze)
            _breaker_need_task_id analyze "${1:-}"
            aria_loop_analyze "$1" || status=$?
            exit "$status"
            ;;
        force-escalate)
            _breaker_need_task_id force-escalate "${1:-}"
            result=$(aria_force_escalate "$1" "${2:-Forced escalation by circuit breaker}") || exit 1
            if [[ "$result" == "HUMAN_INTERVENTION_REQUIRED" ]]; then
                _breaker_log ERROR "Task already at maximum tier, human intervention required"
                exit 1
            fi
            _breaker_log SUCCESS "Escalated to tier $result"
            exit 0
            ;;
        break)
            _breaker_need_task_id break "${1:-}"
            summary_file=$(aria_circuit_break "$1" "${2:-Circuit breaker triggered}") || true
            if [[ -n "$summary_file" && -f "$summary_file" ]]; then
                echo ""
                cat "$summary_file"
                _breaker_log ERROR "Circuit breaker activated. Review summary above."
                exit 0
            fi
            _breaker_log ERROR "Failed to generate circuit break summary"
            exit 1
            ;;
        status)
            aria_iteration_status || status=$?
            exit "$status"
            ;;
        cleanup)
            _breaker_need_task_id cleanup "${1:-}"
            aria_iteration_cleanup "$1" || status=$?
            exit "$status"
            ;;
        log)
            tail -50 "$ITERATION_BREAKER_LOG" 2>/dev/null || echo "No log file"
            exit 0
            ;;
        help | --help | -h)
            _print_help
            exit 0
            ;;
        *)
            echo "Unknown command: $command" >&2
            _print_help >&2
            exit 2
            ;;
    esac
}

if [[ "${BASH_SOURCE[0]}" == "${0}" ]]; then
    set -uo pipefail
    _breaker_main "$@"
fi
