# Writes MAHABHARATHA state files with its own StateManager pieces (PersistenceLayer,
# TaskStateRepo, LevelStateRepo, WorkerStateRepo of thedataengineer/mahabharatha).
import sys
sys.path.insert(0, '.')
from datetime import datetime
from mahabharatha.state.persistence import PersistenceLayer
from mahabharatha.state.task_repo import TaskStateRepo
from mahabharatha.state.level_repo import LevelStateRepo
from mahabharatha.state.worker_repo import WorkerStateRepo
from mahabharatha.constants import TaskStatus, WorkerStatus, LevelMergeStatus
from mahabharatha.types import WorkerState

def repos(out, feature):
    p = PersistenceLayer(feature, state_dir=out)
    p.load()
    with p.atomic_update():
        pass
    return p, TaskStateRepo(p), LevelStateRepo(p), WorkerStateRepo(p)

out = sys.argv[1]
# 1. A plan: every task pending, nothing started.
p, tasks, levels, workers = repos(out, "plan-only")
for t in ("DOCS-L1-001", "DOCS-L1-002", "DOCS-L2-001"):
    tasks.set_task_status(t, TaskStatus.PENDING)

# 2. Under way: level 1 done and merged, level 2 running, a worker crashed.
p, tasks, levels, workers = repos(out, "user-auth")
levels.set_current_level(1)
levels.set_level_status(1, "running")
for wid in (0, 1):
    workers.set_worker_state(WorkerState(worker_id=wid, status=WorkerStatus.RUNNING,
        port=49152 + wid, branch=f"mahabharatha/user-auth/worker-{wid}",
        worktree_path=f".mahabharatha/worktrees/user-auth/worker-{wid}", started_at=datetime.now()))
for t in ("AUTH-L1-001", "AUTH-L1-002", "AUTH-L2-001", "AUTH-L2-002"):
    tasks.set_task_status(t, TaskStatus.PENDING)
for t, w in (("AUTH-L1-001", 0), ("AUTH-L1-002", 1)):
    tasks.claim_task(t, w)
    tasks.set_task_status(t, TaskStatus.IN_PROGRESS, worker_id=w)
    tasks.set_task_status(t, TaskStatus.COMPLETE, worker_id=w)
levels.set_level_status(1, "complete")
levels.set_level_merge_status(1, LevelMergeStatus.COMPLETE)
levels.set_level_status(1, "merged", merge_commit="4f2a9c1")
levels.set_current_level(2)
levels.set_level_status(2, "running")
tasks.claim_task("AUTH-L2-001", 0)
tasks.set_task_status("AUTH-L2-001", TaskStatus.IN_PROGRESS, worker_id=0)
w = workers.get_worker_state(0); w.current_task = "AUTH-L2-001"; w.tasks_completed = 1; workers.set_worker_state(w)
w = workers.get_worker_state(1); w.status = WorkerStatus.CRASHED; w.tasks_completed = 1; workers.set_worker_state(w)
tasks.set_task_status("AUTH-L2-002", TaskStatus.FAILED, worker_id=1, error="pytest: 2 failed")
