"""coordinator_client: the Python client of the coordinator.

Durable multi-agent state over gRPC: the contexts of a judging agent, the conversations of the
agent under test, retry state and the loop breaker, work runs under leases, and A2A tasks
through the coordinator's gateway. Agents keep nothing in memory that matters:

    from coordinator_client import Coordinator, NotFound, Conflict, Unavailable

    with Coordinator("127.0.0.1:50051", token=None, tls_ca=None, timeout=10.0) as c:
        ctx = c.contexts.create("eval-1", agent="green", workspace_dir="/ws/eval-1",
                                labels={"arvo_id": "14368"})
        ctx.record_command("make -C /ws", exit_code=2, duration=1.5)
        c.conversations["eval-1"].append("agent", "execute: ls", tokens=12)

coordinator_client.aio has the same names as coroutines (grpc.aio). Errors are
CoordinatorError subclasses carrying the gRPC code and message (NotFound is also a KeyError);
UNAVAILABLE is retried with backoff within each call's timeout. See clients/python/README.md.
"""

from coordinator_client._client import (
    A2A,
    Agents,
    Breaker,
    ClaimedItem,
    Context,
    Contexts,
    Conversation,
    Conversations,
    Coordinator,
    Task,
    Tasks,
    Work,
)
from coordinator_client._errors import (
    AlreadyExists,
    Cancelled,
    Conflict,
    CoordinatorError,
    DeadlineExceeded,
    FailedPrecondition,
    Internal,
    InvalidArgument,
    NotFound,
    NothingToClaim,
    PermissionDenied,
    ResourceExhausted,
    Unauthenticated,
    Unavailable,
    Unimplemented,
)
from coordinator_client._values import (
    A2AArtifact,
    A2AMessage,
    A2ATask,
    Agent,
    BlockedTask,
    BreakerLogEntry,
    CommandRecord,
    ContextStatus,
    ForceEscalation,
    ItemCounts,
    LoopAnalysis,
    Message,
    QualityGateResult,
    Role,
    Run,
    TaskEscalation,
    TaskFailure,
    TaskState,
    TaskSummary,
    Totals,
    WorkItem,
    task_id_of,
)

__version__ = "0.1.0"

__all__ = [
    "A2A",
    "A2AArtifact",
    "A2AMessage",
    "A2ATask",
    "Agent",
    "Agents",
    "AlreadyExists",
    "BlockedTask",
    "Breaker",
    "BreakerLogEntry",
    "Cancelled",
    "ClaimedItem",
    "CommandRecord",
    "Conflict",
    "Context",
    "ContextStatus",
    "Contexts",
    "Conversation",
    "Conversations",
    "Coordinator",
    "CoordinatorError",
    "DeadlineExceeded",
    "FailedPrecondition",
    "ForceEscalation",
    "Internal",
    "InvalidArgument",
    "ItemCounts",
    "LoopAnalysis",
    "Message",
    "NotFound",
    "NothingToClaim",
    "PermissionDenied",
    "QualityGateResult",
    "ResourceExhausted",
    "Role",
    "Run",
    "Task",
    "TaskEscalation",
    "TaskFailure",
    "TaskState",
    "TaskSummary",
    "Tasks",
    "Totals",
    "Unauthenticated",
    "Unavailable",
    "Unimplemented",
    "Work",
    "WorkItem",
    "task_id_of",
]
