#!/usr/bin/python3
"""Peer: the approach users run today in Python, re-implemented faithfully.

The state of every task lives in one JSON file. An update takes an exclusive lock
(fcntl.flock), reloads the whole file, changes one task and rewrites the whole file through a
temp file that is fsynced and renamed over the old one; the directory is fsynced too, so the
rename survives a crash (what a durable system must do).

  json_state.py --state FILE --tasks N --concurrency C --warmup S --seconds S

runs C worker processes that record failures on random tasks and prints one line of JSON
(throughput and latency percentiles of the updates that ended in the measured window).
"""
import argparse
import fcntl
import json
import multiprocessing
import os
import random
import time


def record_failure(path, task_id, error):
    """Appends a failure to one task and counts the attempt: one locked read-modify-write."""
    with open(path + ".lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            with open(path) as f:
                state = json.load(f)
            task = state["tasks"][task_id]
            task["failures"].append({"attempt": task["attempt_count"], "error": error,
                                     "model": "codex-mini", "timestamp": str(int(time.time()))})
            task["attempt_count"] += 1
            tmp = path + ".tmp"
            with open(tmp, "w") as f:
                json.dump(state, f)
                f.flush()
                os.fsync(f.fileno())
            os.rename(tmp, path)
            dir_fd = os.open(os.path.dirname(os.path.abspath(path)), os.O_RDONLY)
            try:
                os.fsync(dir_fd)
            finally:
                os.close(dir_fd)
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def init_state(path, tasks):
    state = {"tasks": {}}
    for i in range(tasks):
        state["tasks"][f"task-{i}"] = {
            "task_id": f"task-{i}", "task_desc": f"Fix the flaky integration test number {i}",
            "attempt_count": 2, "model_tier": 2, "created_at": "1731000000",
            "failures": [
                {"attempt": 1, "error": "Timeout after 30s", "model": "codex-mini",
                 "timestamp": "1731000060"},
                {"attempt": 2, "error": "Rate limit exceeded", "model": "gpt-5.1",
                 "timestamp": "1731000180"}],
            "escalation_log": [{"timestamp": "1731000120",
                                "reason": "Timeout on the smallest model",
                                "from_tier": 1, "to_tier": 2}],
            "quality_gate_results": [], "priority": "high", "retry_budget": 5}
    with open(path, "w") as f:
        json.dump(state, f)
        f.flush()
        os.fsync(f.fileno())


def worker(path, tasks, measure_from, stop_at, queue):
    rng = random.Random(os.getpid())
    latencies = []
    n = 0
    while True:
        t0 = time.monotonic()
        if t0 >= stop_at:
            break
        record_failure(path, f"task-{rng.randrange(tasks)}",
                       f"AssertionError: expected 200, got 503 ({n})")
        t1 = time.monotonic()
        if measure_from <= t1 <= stop_at:  # ended inside the window (completion rate)
            latencies.append((t1 - t0) * 1e6)
        n += 1
    queue.put(latencies)


def percentile(sorted_values, q):
    if not sorted_values:
        return 0.0
    return sorted_values[min(len(sorted_values) - 1, int(q * len(sorted_values)))]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--state", required=True)
    parser.add_argument("--tasks", type=int, default=50)
    parser.add_argument("--concurrency", type=int, default=1)
    parser.add_argument("--warmup", type=float, default=1)
    parser.add_argument("--seconds", type=float, default=3)
    args = parser.parse_args()
    if args.tasks <= 0 or args.concurrency <= 0 or args.seconds <= 0:
        parser.error("--tasks, --concurrency and --seconds must be positive")
    init_state(args.state, args.tasks)
    queue = multiprocessing.Queue()
    start = time.monotonic() + 0.2  # the workers have started by then
    measure_from = start + args.warmup
    stop_at = measure_from + args.seconds
    procs = [multiprocessing.Process(target=worker,
                                     args=(args.state, args.tasks, measure_from, stop_at, queue))
             for _ in range(args.concurrency)]
    for p in procs:
        p.start()
    latencies = []
    for _ in procs:
        latencies.extend(queue.get())
    for p in procs:
        p.join()
    with open(args.state) as f:  # still whole and valid: no update was torn
        assert len(json.load(f)["tasks"]) == args.tasks
    latencies.sort()
    print(json.dumps({
        "workload": "python_json", "tasks": args.tasks, "concurrency": args.concurrency,
        "calls": len(latencies), "errors": 0, "seconds": args.seconds,
        "throughput": round(len(latencies) / args.seconds, 1),
        "p50_us": round(percentile(latencies, 0.5), 1),
        "p99_us": round(percentile(latencies, 0.99), 1),
        "p999_us": round(percentile(latencies, 0.999), 1)}))


if __name__ == "__main__":
    main()
