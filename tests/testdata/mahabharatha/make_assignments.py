"""Writes worker-assignments.json with MAHABHARATHA's own WorkerAssignment.save_to_file.

Run from a checkout of thedataengineer/mahabharatha (commit 5bb53e3) with the output directory
as the argument. The assignments are those of user-auth.json (each task to the worker that ran
it), in the order assign() makes them: level by level, in task-graph order within a level.
"""

import sys
from pathlib import Path

from mahabharatha.assign import WorkerAssignment

out = Path(sys.argv[1])
assigner = WorkerAssignment(worker_count=2)
for task_id, worker_id in [
    ("AUTH-L1-001", 0),
    ("AUTH-L1-002", 1),
    ("AUTH-L2-001", 0),
    ("AUTH-L2-002", 1),
]:
    assigner._assignments[task_id] = worker_id
    assigner._worker_tasks[worker_id].append(task_id)
assigner.save_to_file(str(out / "user-auth-assignments.json"), "user-auth")
