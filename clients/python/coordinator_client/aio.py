"""The asyncio twin of coordinator_client, on grpc.aio: the same names, as coroutines.

    from coordinator_client.aio import Coordinator

    async with Coordinator("127.0.0.1:50051") as c:      # make it inside a running loop
        ctx = await c.contexts.create("eval-1", agent="green", workspace_dir="/ws/eval-1")
        ctx = await c.contexts["eval-1"]                   # KeyError (NotFound) when missing
        await c.contexts.contains("eval-1"); await c.contexts.get("eval-1")
        await ctx.record_command("make -C /ws", exit_code=2, duration=1.5)
        await ctx.update(status="completed", labels={"score": "0.8"})
        async for ctx in c.contexts.values(agent="green", status="active"): ...
        await c.contexts.delete("eval-1")
        conv = c.conversations["eval-1"]                   # a handle, no call
        await conv.append("agent", "execute: ls", tokens=12); await conv.messages(tail=5)
        t = await c.tasks.init("Generate database migration")
        await t.attempt(); await t.fail("Timeout after 30s"); await t.escalate("timeout")
        await t.tier; await t.failure_context()
        await c.breaker.check(t.id)
        async with c.work.claim(run_id, worker="w1", ttl=30) as item: ...
        await c.a2a.send("green", "Task ID: uaf-list-remove", wait=True)

Where Python has no awaitable form of an operator, the method is the way: `in` is
`await contexts.contains(id)`, `del contexts[id]` is `await contexts.delete(id)`, and
`len(contexts)` is `await contexts.count()`. Retries, errors and timeouts are those of the
blocking client (coordinator_client._client).
"""

from __future__ import annotations

import asyncio
import time
from typing import (
    Any,
    AsyncIterator,
    Awaitable,
    Callable,
    Generator,
    Iterable,
    List,
    Mapping,
    Optional,
    Sequence,
    Tuple,
    TypeVar,
    Union,
)

import grpc
import grpc.aio

from coordinator_client import _requests as rq
from coordinator_client._channel import (
    FIRST_BACKOFF,
    HEALTH_METHOD,
    Metadata,
    PathOrPem,
    channel_options,
    credentials_for,
    decode_health_response,
    encode_health_request,
    jitter,
    load_ca,
    load_token,
    metadata_for,
    RETRIED_CODES,
    next_backoff,
    retries_spent,
    target_of,
)
from coordinator_client import _client
from coordinator_client._client import _SUBSCRIBE_AGAIN, _event_state
from coordinator_client._errors import (
    Cancelled,
    Conflict,
    CoordinatorError,
    DeadlineExceeded,
    FailedPrecondition,
    NotFound,
    NothingToClaim,
    Unavailable,
    from_rpc_error,
)
from coordinator_client._stubs import (
    a2a_pb2,
    a2a_pb2_grpc,
    agent_registry_pb2,
    agent_registry_pb2_grpc,
    breaker_pb2,
    breaker_pb2_grpc,
    context_pb2,
    context_pb2_grpc,
    conversation_pb2,
    conversation_pb2_grpc,
    task_state_pb2,
    task_state_pb2_grpc,
    work_pb2,
    work_pb2_grpc,
)
from coordinator_client._values import (
    A2A_STOP_STATES,
    INT32_MAX,
    INT64_MAX,
    A2ATask,
    Agent,
    BlockedTask,
    BreakerLogEntry,
    CommandRecord,
    ContextFields,
    ContextStatus,
    ForceEscalation,
    LoopAnalysis,
    Message,
    QualityGateResult,
    Role,
    Run,
    Seconds,
    TaskFailure,
    TaskState,
    TaskSummary,
    Totals,
    WorkItem,
    check_bool,
    check_id,
    check_int,
    check_positive_seconds,
    check_str,
    seconds_of,
    task_id_of,
    time_of,
)

T = TypeVar("T")

__all__ = [
    "A2A",
    "Agents",
    "Breaker",
    "ClaimedItem",
    "Context",
    "Contexts",
    "Conversation",
    "Conversations",
    "Coordinator",
    "Task",
    "Tasks",
    "Work",
]


class _Transport:
    """The grpc.aio channel, the metadata every call carries, and the retrying call."""

    def __init__(self, target: str, token: Optional[str], token_file: Any,
                 tls_ca: Optional[PathOrPem], tls_server_name: Optional[str], timeout: Seconds,
                 options: Optional[Sequence[Tuple[str, Any]]]) -> None:
        self.target = target_of(target)
        self.timeout = check_positive_seconds("timeout", timeout)
        self.metadata: Metadata = metadata_for(load_token(token, token_file))
        credentials = credentials_for(load_ca(tls_ca))
        opts = channel_options(tls_server_name, options)
        self.closed = False
        self.channel = (grpc.aio.secure_channel(self.target, credentials, options=opts)
                        if credentials is not None else
                        grpc.aio.insecure_channel(self.target, options=opts))

    async def call(self, method: Callable[..., Any], name: str, request: Any, *,
                   timeout: Optional[float] = None, metadata: Metadata = ()) -> Any:
        """Calls a unary method; retries UNAVAILABLE with backoff within the timeout."""
        budget = self.timeout if timeout is None else timeout
        loop = asyncio.get_running_loop()
        deadline = loop.time() + budget
        backoff = FIRST_BACKOFF
        attempts = 0
        retried: Optional[Tuple[grpc.StatusCode, str]] = None
        while True:
            attempts += 1
            remaining = deadline - loop.time()
            try:
                return await method(request, timeout=max(remaining, 0.001),
                                    metadata=self.metadata + metadata)
            except grpc.aio.AioRpcError as error:
                code, details = error.code(), error.details() or ""
                if code in RETRIED_CODES and not self.closed:
                    retried = (code, details)
                    pause = min(backoff, deadline - loop.time())
                    if pause > 0:
                        await asyncio.sleep(pause)
                        backoff = next_backoff(backoff)
                        continue
                if retried is not None and code in RETRIED_CODES | {
                        grpc.StatusCode.DEADLINE_EXCEEDED}:
                    raise retries_spent(retried, attempts, budget, name) from None
                raise from_rpc_error(error, name) from None

    async def pages(self, method: Callable[..., Any], name: str, request: Any,
                    field: str) -> AsyncIterator[Any]:
        request_copy = type(request)()
        request_copy.CopyFrom(request)
        while True:
            response = await self.call(method, name, request_copy)
            for item in getattr(response, field):
                yield item
            if not response.next_page_token:
                return
            request_copy.page_token = response.next_page_token

    async def close(self) -> None:
        self.closed = True
        await self.channel.close()


class Coordinator:
    """A grpc.aio connection to the coordinator; the arguments are those of
    coordinator_client.Coordinator. Make it inside a running event loop."""

    def __init__(self, target: str = "127.0.0.1:50051", token: Optional[str] = None,
                 tls_ca: Optional[PathOrPem] = None, timeout: Seconds = 10.0, *,
                 token_file: Optional[Any] = None, tls_server_name: Optional[str] = None,
                 options: Optional[Sequence[Tuple[str, Any]]] = None) -> None:
        self._t = _Transport(target, token, token_file, tls_ca, tls_server_name, timeout,
                             options)
        self.contexts = Contexts(self._t)
        self.conversations = Conversations(self._t)
        self.tasks = Tasks(self._t)
        self.breaker = Breaker(self._t)
        self.work = Work(self._t)
        self.a2a = A2A(self._t)
        self.agents = Agents(self._t)

    @property
    def target(self) -> str:
        return self._t.target

    @property
    def timeout(self) -> float:
        return self._t.timeout

    async def health(self, service: str = "") -> str:
        """grpc.health.v1 status: "SERVING", "NOT_SERVING", "SERVICE_UNKNOWN" or "UNKNOWN"."""
        method = self._t.channel.unary_unary(
            HEALTH_METHOD, request_serializer=encode_health_request,
            response_deserializer=decode_health_response)
        return await self._t.call(method, "Health.Check", check_str("service", service))

    async def close(self) -> None:
        await self._t.close()

    async def __aenter__(self) -> "Coordinator":
        return self

    async def __aexit__(self, *_: Any) -> None:
        await self.close()

    def __repr__(self) -> str:
        return f"aio.Coordinator({self.target!r})"


# ---- Contexts ----

class Context(ContextFields):
    """A TaskContext as last read or written, with coroutines that change it (see
    coordinator_client.Context)."""

    __slots__ = ("_contexts",)

    def __init__(self, contexts: "Contexts", proto: context_pb2.TaskContext) -> None:
        super().__init__(proto)
        self._contexts = contexts

    async def record_command(self, command: str, exit_code: int = 0,
                             duration: Optional[Seconds] = None,
                             output_digest: str = "") -> "Context":
        request = rq.record_command(self.context_id, command, exit_code, duration,
                                    output_digest)
        response = await self._contexts._t.call(self._contexts._stub.RecordCommand,
                                                "ContextService.RecordCommand", request)
        self._proto = response.context
        return self

    async def update(self, *, agent: Optional[str] = None,
                     external_task_id: Optional[str] = None,
                     workspace_dir: Optional[str] = None, shared_dir: Optional[str] = None,
                     environment_handle: Optional[str] = None,
                     status: Optional[Union[str, ContextStatus]] = None,
                     labels: Optional[Mapping[str, Optional[str]]] = None,
                     replace_labels: bool = False) -> "Context":
        """As coordinator_client.Context.update: read-version-retry on Conflict."""
        changes = rq.context_changes(
            agent=agent, external_task_id=external_task_id, workspace_dir=workspace_dir,
            shared_dir=shared_dir, environment_handle=environment_handle, status=status,
            labels=labels, replace_labels=replace_labels)
        if not changes:
            return self
        t = self._contexts._t
        deadline = time.monotonic() + t.timeout
        current = self._proto
        attempt = 0
        while True:
            request = rq.update_context(current, changes, replace_labels)
            try:
                self._proto = await t.call(self._contexts._stub.UpdateContext,
                                           "ContextService.UpdateContext", request,
                                           timeout=max(deadline - time.monotonic(), 0.001))
                return self
            except Conflict:
                if time.monotonic() >= deadline:
                    raise
            attempt += 1
            await asyncio.sleep(jitter(attempt))
            current = await t.call(self._contexts._stub.GetContext,
                                   "ContextService.GetContext",
                                   context_pb2.GetContextRequest(context_id=self.context_id),
                                   timeout=max(deadline - time.monotonic(), 0.001))

    async def refresh(self) -> "Context":
        self._proto = await self._contexts._get(self.context_id)
        return self

    async def delete(self) -> None:
        await self._contexts.delete(self.context_id)

    async def commands(self, page_size: Optional[int] = None) -> List[CommandRecord]:
        request = context_pb2.ListCommandsRequest(context_id=self.context_id,
                                                  page_size=rq.page_size_arg(page_size))
        return [CommandRecord.from_proto(r) async for r in self._contexts._t.pages(
            self._contexts._stub.ListCommands, "ContextService.ListCommands", request,
            "commands")]

    @property
    def conversation(self) -> "Conversation":
        return Conversation(self._contexts._t, self.context_id)


class Contexts:
    """The TaskContexts by context_id (see coordinator_client.Contexts)."""

    def __init__(self, transport: _Transport) -> None:
        self._t = transport
        self._stub = context_pb2_grpc.ContextServiceStub(transport.channel)

    async def create(self, context_id: str, *, agent: str = "", external_task_id: str = "",
                     workspace_dir: str = "", shared_dir: str = "",
                     environment_handle: str = "",
                     status: Optional[Union[str, ContextStatus]] = None,
                     labels: Optional[Mapping[str, str]] = None,
                     parties: Optional[Iterable[str]] = None) -> Context:
        request = rq.create_context(
            context_id, agent=agent, external_task_id=external_task_id,
            workspace_dir=workspace_dir, shared_dir=shared_dir,
            environment_handle=environment_handle, status=status, labels=labels,
            parties=parties)
        return Context(self, await self._t.call(self._stub.CreateContext,
                                                "ContextService.CreateContext", request))

    async def _get(self, context_id: str) -> context_pb2.TaskContext:
        request = context_pb2.GetContextRequest(context_id=check_id("context_id", context_id))
        return await self._t.call(self._stub.GetContext, "ContextService.GetContext", request)

    def __getitem__(self, context_id: str) -> Awaitable[Context]:
        """`await contexts[id]`: the context; KeyError (NotFound) when there is none."""
        check_id("context_id", context_id)

        async def read() -> Context:
            return Context(self, await self._get(context_id))
        return read()

    async def get(self, context_id: str,
                  default: Optional[Context] = None) -> Optional[Context]:
        try:
            return await self[context_id]
        except NotFound:
            return default

    async def contains(self, context_id: str) -> bool:
        """`id in contexts`: whether the context exists."""
        return await self.get(context_id) is not None

    async def delete(self, context_id: str, version: int = 0) -> None:
        request = context_pb2.DeleteContextRequest(
            context_id=check_id("context_id", context_id),
            version=check_int("version", version, 0, INT64_MAX))
        await self._t.call(self._stub.DeleteContext, "ContextService.DeleteContext", request)

    async def values(self, agent: Optional[str] = None,
                     status: Optional[Union[str, ContextStatus]] = None,
                     page_size: Optional[int] = None) -> AsyncIterator[Context]:
        request = rq.list_contexts(agent, status, page_size)
        async for proto in self._t.pages(self._stub.ListContexts,
                                         "ContextService.ListContexts", request, "contexts"):
            yield Context(self, proto)

    async def keys(self, agent: Optional[str] = None,
                   status: Optional[Union[str, ContextStatus]] = None) -> AsyncIterator[str]:
        async for context in self.values(agent, status):
            yield context.context_id

    async def items(self, agent: Optional[str] = None,
                    status: Optional[Union[str, ContextStatus]] = None
                    ) -> AsyncIterator[Tuple[str, Context]]:
        async for context in self.values(agent, status):
            yield context.context_id, context

    def __aiter__(self) -> AsyncIterator[str]:
        return self.keys()

    async def count(self) -> int:
        """`len(contexts)`: reads every page."""
        return len([c async for c in self.values(page_size=1000)])


# ---- Conversations ----

class Conversation:
    """The conversation under one context_id (see coordinator_client.Conversation)."""

    def __init__(self, transport: _Transport, context_id: str) -> None:
        self._t = transport
        self._stub = conversation_pb2_grpc.ConversationServiceStub(transport.channel)
        self.context_id = check_id("context_id", context_id)

    async def append(self, role: Union[str, Role], text: str, tokens: int = 0) -> Totals:
        response = await self._t.call(self._stub.AppendMessage,
                                      "ConversationService.AppendMessage",
                                      rq.append_message(self.context_id, role, text, tokens))
        return Totals(response.step_count, response.total_tokens, response.message_count)

    async def _pages(self, tail: Optional[int], page_size: Optional[int]
                     ) -> AsyncIterator[conversation_pb2.GetConversationResponse]:
        request = rq.get_conversation(self.context_id, tail, page_size)
        while True:
            response = await self._t.call(self._stub.GetConversation,
                                          "ConversationService.GetConversation", request)
            yield response
            if not response.next_page_token:
                return
            request.page_token = response.next_page_token

    async def messages(self, tail: Optional[int] = None,
                       page_size: Optional[int] = None) -> List[Message]:
        return [Message.from_proto(m) async for page in self._pages(tail, page_size)
                for m in page.messages]

    async def __aiter__(self) -> AsyncIterator[Message]:
        async for page in self._pages(None, None):
            for message in page.messages:
                yield Message.from_proto(message)

    async def totals(self) -> Totals:
        async for page in self._pages(1, 1):
            return Totals(page.step_count, page.total_tokens, page.message_count)
        raise AssertionError("unreachable")  # pragma: no cover

    def __repr__(self) -> str:
        return f"aio.Conversation({self.context_id!r})"


class Conversations:
    """Conversations by context_id: conversations[id] is a handle (no call)."""

    def __init__(self, transport: _Transport) -> None:
        self._t = transport

    def __getitem__(self, context_id: str) -> Conversation:
        return Conversation(self._t, context_id)

    async def contains(self, context_id: str) -> bool:
        """`id in conversations`: whether the conversation has messages."""
        try:
            await Conversation(self._t, context_id).totals()
            return True
        except NotFound:
            return False

    async def get(self, context_id: str) -> Optional[Conversation]:
        return Conversation(self._t, context_id) if await self.contains(context_id) else None


# ---- Retry state ----

class Task:
    """The retry state of one task (see coordinator_client.Task); `await t.tier`."""

    def __init__(self, transport: _Transport, task_id: str,
                 created: Optional[bool] = None) -> None:
        self._t = transport
        self._stub = task_state_pb2_grpc.TaskStateServiceStub(transport.channel)
        self.id = check_id("task_id", task_id)
        self.created = created

    async def _call(self, name: str, request: Any) -> Any:
        return await self._t.call(getattr(self._stub, name), f"TaskStateService.{name}",
                                  request)

    async def attempt(self) -> int:
        return (await self._call("IncrementAttempt", task_state_pb2.IncrementAttemptRequest(
            task_id=self.id))).attempt_count

    async def fail(self, error: str) -> TaskFailure:
        request = task_state_pb2.RecordFailureRequest(task_id=self.id,
                                                      error=check_str("error", error))
        return TaskFailure.from_proto((await self._call("RecordFailure", request)).failure)

    async def escalate(self, reason: str = "", steps: int = 1) -> int:
        return (await self._call("Escalate", rq.escalate(self.id, reason, steps))).model_tier

    async def _tier(self) -> Any:
        return await self._call("GetTier", task_state_pb2.GetTierRequest(task_id=self.id))

    @property
    def tier(self) -> Awaitable[int]:
        """`await t.tier`: the current tier."""
        async def read() -> int:
            return (await self._tier()).model_tier
        return read()

    @property
    def model(self) -> Awaitable[str]:
        """`await t.model`: the model of the current tier."""
        async def read() -> str:
            return (await self._tier()).model
        return read()

    async def failure_context(self, tail: Optional[int] = None) -> str:
        request = task_state_pb2.GetFailureContextRequest(task_id=self.id, tail=rq.tail_arg(tail))
        return (await self._call("GetFailureContext", request)).text

    async def quality_gate(self, check: str, passed: bool,
                           detail: str = "") -> QualityGateResult:
        request = task_state_pb2.RecordQualityGateRequest(
            task_id=self.id, check=check_id("check", check),
            passed=check_bool("passed", passed), detail=check_str("detail", detail))
        return QualityGateResult.from_proto(
            (await self._call("RecordQualityGate", request)).result)

    async def state(self) -> TaskState:
        return TaskState.from_proto(await self._call(
            "GetTaskState", task_state_pb2.GetTaskStateRequest(task_id=self.id)))

    async def get(self, field: str) -> str:
        request = task_state_pb2.GetTaskFieldRequest(task_id=self.id,
                                                     field=check_id("field", field))
        return (await self._call("GetTaskField", request)).value

    async def set(self, field: str, value: Union[str, int]) -> str:
        request = task_state_pb2.SetTaskFieldRequest(
            task_id=self.id, field=check_id("field", field), value=rq.field_value(value))
        return (await self._call("SetTaskField", request)).value

    async def cleanup(self) -> bool:
        return (await self._call("CleanupTask",
                                 task_state_pb2.CleanupTaskRequest(task_id=self.id))).was_blocked

    def __repr__(self) -> str:
        return f"aio.Task({self.id!r})"


class Tasks:
    """Retry state of tasks by id (see coordinator_client.Tasks)."""

    def __init__(self, transport: _Transport) -> None:
        self._t = transport
        self._stub = task_state_pb2_grpc.TaskStateServiceStub(transport.channel)

    @staticmethod
    def id_for(description: str) -> str:
        return task_id_of(description)

    async def init(self, description: str) -> Task:
        request = task_state_pb2.InitTaskRequest(description=check_id("description",
                                                                      description))
        response = await self._t.call(self._stub.InitTask, "TaskStateService.InitTask",
                                      request)
        return Task(self._t, response.task_id, response.created)

    def __getitem__(self, task_id: str) -> Awaitable[Task]:
        request = task_state_pb2.GetTierRequest(task_id=check_id("task_id", task_id))

        async def read() -> Task:
            await self._t.call(self._stub.GetTier, "TaskStateService.GetTier", request)
            return Task(self._t, task_id)
        return read()

    async def get(self, task_id: str) -> Optional[Task]:
        try:
            return await self[task_id]
        except NotFound:
            return None

    async def contains(self, task_id: str) -> bool:
        """`id in tasks`: whether the task has state."""
        return await self.get(task_id) is not None

    async def values(self, page_size: Optional[int] = None) -> AsyncIterator[TaskSummary]:
        request = task_state_pb2.ListTasksRequest(page_size=rq.page_size_arg(page_size))
        async for summary in self._t.pages(self._stub.ListTasks, "TaskStateService.ListTasks",
                                           request, "tasks"):
            yield TaskSummary.from_proto(summary)


# ---- Breaker ----

class Breaker:
    """The loop breaker (see coordinator_client.Breaker)."""

    def __init__(self, transport: _Transport) -> None:
        self._t = transport
        self._stub = breaker_pb2_grpc.BreakerServiceStub(transport.channel)

    async def _call(self, name: str, request: Any) -> Any:
        return await self._t.call(getattr(self._stub, name), f"BreakerService.{name}", request)

    async def check(self, task: Union[str, Task], *, repeated_error: Optional[int] = None,
                    stuck_tier: Optional[int] = None,
                    quality_gate: Optional[int] = None) -> Optional[str]:
        response = await self._call("CheckLoop", rq.loop_request(
            breaker_pb2.CheckLoopRequest, task, repeated_error, stuck_tier, quality_gate))
        return response.pattern_type if response.looping else None

    async def analyze(self, task: Union[str, Task], *, repeated_error: Optional[int] = None,
                      stuck_tier: Optional[int] = None,
                      quality_gate: Optional[int] = None) -> LoopAnalysis:
        return LoopAnalysis.from_proto(await self._call("AnalyzeLoop", rq.loop_request(
            breaker_pb2.AnalyzeLoopRequest, task, repeated_error, stuck_tier, quality_gate)))

    async def force_escalate(self, task: Union[str, Task], reason: str = "") -> ForceEscalation:
        return ForceEscalation.from_proto(await self._call("ForceEscalate",
                                                           rq.breaker_force(task, reason)))

    async def break_task(self, task: Union[str, Task], reason: str = "") -> BlockedTask:
        request = breaker_pb2.BreakRequest(task_id=rq.task_id_arg(task),
                                           reason=check_str("reason", reason))
        response = await self._call("Break", request)
        return BlockedTask.from_proto(response.blocked, response.summary)

    async def status(self) -> List[BlockedTask]:
        response = await self._call("GetBreakerStatus", breaker_pb2.GetBreakerStatusRequest())
        return [BlockedTask.from_proto(b) for b in response.blocked_tasks]

    async def summary(self, task: Union[str, Task]) -> str:
        return (await self._call("GetBreakSummary", breaker_pb2.GetBreakSummaryRequest(
            task_id=rq.task_id_arg(task)))).summary

    async def cleanup(self, task: Union[str, Task]) -> bool:
        return (await self._call("Cleanup", breaker_pb2.CleanupBreakerRequest(
            task_id=rq.task_id_arg(task)))).was_blocked

    async def log(self, tail: Optional[int] = None) -> List[BreakerLogEntry]:
        request = breaker_pb2.ReadBreakerLogRequest(tail=rq.tail_arg(tail))
        return [BreakerLogEntry.from_proto(e) async for e in self._t.pages(
            self._stub.ReadBreakerLog, "BreakerService.ReadBreakerLog", request, "entries")]


# ---- Work ----

class ClaimedItem:
    """A work item held under a lease (see coordinator_client.ClaimedItem); `async with`
    heartbeats in a background task, completes on exit and fails on an exception."""

    def __init__(self, work: "Work", response: work_pb2.ClaimResponse, ttl: float) -> None:
        self._work = work
        self.item = WorkItem.from_proto(response.item)
        self.lease: str = response.lease
        self.epoch: int = response.epoch
        self.lease_expire_time = time_of(response, "lease_expire_time")
        self.ttl = ttl
        self.summary = ""
        self.progress: Optional[str] = None
        self._lost = False
        self._finished = False
        self._heartbeats: Optional[asyncio.Task[None]] = None
        self.heartbeat_error: Optional[CoordinatorError] = None

    @property
    def run_id(self) -> str:
        """The run the item belongs to."""
        return self.item.run_id

    @property
    def item_id(self) -> str:
        """The claimed item's id."""
        return self.item.item_id

    @property
    def lost(self) -> bool:
        return self._lost

    async def _lease_call(self, name: str, request: Any) -> Any:
        try:
            return await self._work._call(name, request)
        except FailedPrecondition:
            self._lost = True
            raise

    async def heartbeat(self, progress: Optional[str] = None,
                        ttl: Optional[Seconds] = None) -> None:
        response = await self._lease_call("Heartbeat", rq.heartbeat(self.lease, progress, ttl))
        self.lease_expire_time = time_of(response, "lease_expire_time")

    async def checkpoint(self, note: str) -> WorkItem:
        request = work_pb2.CheckpointRequest(lease=self.lease, note=check_str("note", note))
        return WorkItem.from_proto(await self._lease_call("Checkpoint", request))

    async def complete(self, summary: Optional[str] = None) -> WorkItem:
        request = work_pb2.CompleteRequest(
            lease=self.lease, summary=check_str("summary", self.summary if summary is None
                                                else summary))
        self._finished = True
        return WorkItem.from_proto(await self._lease_call("Complete", request))

    async def fail(self, error: str, retryable: bool = True) -> WorkItem:
        request = work_pb2.FailRequest(lease=self.lease, error=check_id("error", error),
                                       retryable=check_bool("retryable", retryable))
        self._finished = True
        return WorkItem.from_proto(await self._lease_call("Fail", request))

    async def _beat(self) -> None:
        while True:
            await asyncio.sleep(self.ttl / 3)
            try:
                await self.heartbeat(self.progress)
            except FailedPrecondition as error:
                self.heartbeat_error = error
                return
            except CoordinatorError as error:
                self.heartbeat_error = error

    async def __aenter__(self) -> "ClaimedItem":
        self._heartbeats = asyncio.ensure_future(self._beat())
        return self

    async def __aexit__(self, exc_type: Any, exc: Optional[BaseException], tb: Any) -> None:
        if self._heartbeats is not None:
            self._heartbeats.cancel()
            try:
                await self._heartbeats
            except asyncio.CancelledError:
                pass
        if self._finished:
            return
        if exc is None:
            await self.complete()
            return
        try:
            await self.fail(rq.describe_exception(exc))
        except CoordinatorError as error:
            if hasattr(exc, "add_note"):
                exc.add_note(f"failing work item {self.item_id} failed too: {error}")

    def __repr__(self) -> str:
        return f"aio.ClaimedItem({self.run_id!r}, {self.item_id!r}, epoch={self.epoch})"


class _Claim:
    """What Work.claim returns: `await` it for the item, or `async with` it to hold the item
    for the block."""

    def __init__(self, make: Callable[[], Awaitable[ClaimedItem]]) -> None:
        self._make = make
        self._item: Optional[ClaimedItem] = None

    def __await__(self) -> Generator[Any, None, ClaimedItem]:
        return self._make().__await__()

    async def __aenter__(self) -> ClaimedItem:
        self._item = await self._make()
        return await self._item.__aenter__()

    async def __aexit__(self, exc_type: Any, exc: Optional[BaseException], tb: Any) -> None:
        assert self._item is not None
        await self._item.__aexit__(exc_type, exc, tb)


class Work:
    """Runs of work items handed to workers under leases (see coordinator_client.Work)."""

    def __init__(self, transport: _Transport) -> None:
        self._t = transport
        self._stub = work_pb2_grpc.WorkServiceStub(transport.channel)

    async def _call(self, name: str, request: Any) -> Any:
        return await self._t.call(getattr(self._stub, name), f"WorkService.{name}", request)

    async def create_run(self, items: Iterable[Mapping[str, Any]], *, run_id: str = "",
                         kind: str = "workstreams", specs_dir: str = "", base_branch: str = "",
                         feature: str = "", max_attempts: Optional[int] = None,
                         backoff_base: Optional[Seconds] = None,
                         backoff_max: Optional[Seconds] = None,
                         non_retryable_errors: Optional[Iterable[str]] = None) -> Run:
        return Run.from_proto(await self._call("CreateRun", rq.create_run(
            items, run_id=run_id, kind=kind, specs_dir=specs_dir, base_branch=base_branch,
            feature=feature, max_attempts=max_attempts, backoff_base=backoff_base,
            backoff_max=backoff_max, non_retryable_errors=non_retryable_errors)))

    async def import_task_graph(self, graph: Union[str, Mapping[str, Any]], *, run_id: str = "",
                                feature: str = "", max_attempts: Optional[int] = None,
                                backoff_base: Optional[Seconds] = None,
                                backoff_max: Optional[Seconds] = None,
                                non_retryable_errors: Optional[Iterable[str]] = None) -> Run:
        return Run.from_proto(await self._call("ImportTaskGraph", rq.import_task_graph(
            graph, run_id=run_id, feature=feature, max_attempts=max_attempts,
            backoff_base=backoff_base, backoff_max=backoff_max,
            non_retryable_errors=non_retryable_errors)))

    async def run(self, run_id: str) -> Run:
        return Run.from_proto(await self._call("GetRun", work_pb2.GetRunRequest(
            run_id=check_id("run_id", run_id))))

    async def runs(self) -> AsyncIterator[Run]:
        async for run in self._t.pages(self._stub.ListRuns, "WorkService.ListRuns",
                                       work_pb2.ListRunsRequest(), "runs"):
            yield Run.from_proto(run)

    async def items(self, run_id: str) -> AsyncIterator[WorkItem]:
        request = work_pb2.ListItemsRequest(run_id=check_id("run_id", run_id))
        async for item in self._t.pages(self._stub.ListItems, "WorkService.ListItems",
                                        request, "items"):
            yield WorkItem.from_proto(item)

    async def item(self, run_id: str, item_id: str) -> WorkItem:
        return WorkItem.from_proto(await self._call("GetItem", work_pb2.GetItemRequest(
            run_id=check_id("run_id", run_id), item_id=check_id("item_id", item_id))))

    async def retry(self, run_id: str, item_id: str) -> WorkItem:
        return WorkItem.from_proto(await self._call("Retry", work_pb2.RetryRequest(
            run_id=check_id("run_id", run_id), item_id=check_id("item_id", item_id))))

    async def try_claim(self, run_id: str, worker: str,
                        ttl: Seconds = 30.0) -> Optional[ClaimedItem]:
        request = rq.claim(run_id, worker, ttl)
        response = await self._call("Claim", request)
        if not response.HasField("item"):
            return None
        return ClaimedItem(self, response, seconds_of(request.lease_ttl))

    def claim(self, run_id: str, worker: str, ttl: Seconds = 30.0, *,
              wait: Seconds = 0.0) -> _Claim:
        """`await c.work.claim(...)` or `async with c.work.claim(...) as item`; raises
        NothingToClaim as the blocking claim does."""
        request = rq.claim(run_id, worker, ttl)
        wait_seconds = check_positive_seconds("wait", wait) if wait else 0.0

        async def make() -> ClaimedItem:
            give_up = time.monotonic() + wait_seconds
            while True:
                response = await self._call("Claim", request)
                if response.HasField("item"):
                    return ClaimedItem(self, response, seconds_of(request.lease_ttl))
                retry_after = (seconds_of(response.retry_after)
                               if response.HasField("retry_after") else None)
                left = give_up - time.monotonic()
                if response.stalled or left <= 0:
                    raise NothingToClaim(run_id, response.stalled, retry_after)
                await asyncio.sleep(min(left, retry_after if retry_after is not None else 0.2,
                                        1.0))
        return _Claim(make)


# ---- A2A ----

class Agents:
    """The agents registered with the A2A gateway (see coordinator_client.Agents)."""

    def __init__(self, transport: _Transport) -> None:
        self._t = transport
        self._stub = agent_registry_pb2_grpc.AgentRegistryStub(transport.channel)

    async def register(self, name: str, endpoint: str = "", *, card_url: str = "",
                       description: str = "") -> Agent:
        return Agent.from_proto(await self._t.call(
            self._stub.RegisterAgent, "AgentRegistry.RegisterAgent",
            rq.register_agent(name, endpoint, card_url, description)))

    def __getitem__(self, name: str) -> Awaitable[Agent]:
        request = agent_registry_pb2.GetAgentRequest(name=check_id("name", name))

        async def read() -> Agent:
            return Agent.from_proto(await self._t.call(self._stub.GetAgent,
                                                       "AgentRegistry.GetAgent", request))
        return read()

    async def get(self, name: str) -> Optional[Agent]:
        try:
            return await self[name]
        except NotFound:
            return None

    async def contains(self, name: str) -> bool:
        """`name in agents`: whether the agent is registered."""
        return await self.get(name) is not None

    async def values(self) -> AsyncIterator[Agent]:
        async for agent in self._t.pages(self._stub.ListAgents, "AgentRegistry.ListAgents",
                                         agent_registry_pb2.ListAgentsRequest(), "agents"):
            yield Agent.from_proto(agent)

    async def delete(self, name: str) -> None:
        """`del agents[name]`: unregisters the agent."""
        await self._t.call(self._stub.DeleteAgent, "AgentRegistry.DeleteAgent",
                           agent_registry_pb2.DeleteAgentRequest(name=check_id("name", name)))


class A2A:
    """A2A tasks through the coordinator's gateway (see coordinator_client.A2A)."""

    def __init__(self, transport: _Transport) -> None:
        self._t = transport
        self._stub = a2a_pb2_grpc.A2AServiceStub(transport.channel)

    async def _call(self, name: str, request: Any) -> Any:
        return await self._t.call(getattr(self._stub, name), f"A2AService.{name}", request,
                                  metadata=rq.A2A_METADATA)

    async def send(self, agent: str, text: str = "", *, wait: bool = False,
                   wait_timeout: Seconds = 300.0, context_id: Optional[str] = None,
                   task_id: Optional[str] = None, data: Optional[Mapping[str, Any]] = None,
                   metadata: Optional[Mapping[str, Any]] = None) -> A2ATask:
        check_bool("wait", wait)
        request = rq.a2a_send(agent, text, context_id=context_id, task_id=task_id, data=data,
                              metadata=metadata)
        task = (await self._call("SendMessage", request)).task
        if not wait:
            return A2ATask.from_proto(task)
        return await self.wait(task.id, timeout=wait_timeout)

    async def get(self, task_id: str, history_length: Optional[int] = None) -> A2ATask:
        request = a2a_pb2.GetTaskRequest(id=check_id("task_id", task_id))
        if history_length is not None:
            request.history_length = check_int("history_length", history_length, 0,
                                                  INT32_MAX)
        return A2ATask.from_proto(await self._call("GetTask", request))

    async def wait(self, task_id: str, timeout: Seconds = 300.0) -> A2ATask:
        check_id("task_id", task_id)
        deadline = time.monotonic() + check_positive_seconds("timeout", timeout)
        backoff = FIRST_BACKOFF
        while True:
            refused: Optional[grpc.aio.AioRpcError] = None
            stream = self._stub.SubscribeToTask(
                a2a_pb2.SubscribeToTaskRequest(id=task_id),
                timeout=max(deadline - time.monotonic(), 0.001),
                metadata=self._t.metadata + rq.A2A_METADATA)
            try:
                async for event in stream:
                    if _event_state(event) in A2A_STOP_STATES:
                        break
            except grpc.aio.AioRpcError as error:
                if error.code() not in _SUBSCRIBE_AGAIN:
                    raise from_rpc_error(error, "A2AService.SubscribeToTask") from None
                refused = error
            finally:
                stream.cancel()
            try:
                task: Optional[A2ATask] = await self.get(task_id)
            except (Unavailable, Cancelled):
                task = None
            if task is not None and task.done:
                return task
            if refused is not None and refused.code() == grpc.StatusCode.FAILED_PRECONDITION:
                raise from_rpc_error(refused, "A2AService.SubscribeToTask")
            left = deadline - time.monotonic()
            if left <= 0:
                raise DeadlineExceeded(f"task {task_id} did not end within {timeout}s",
                                       grpc.StatusCode.DEADLINE_EXCEEDED,
                                       "A2AService.SubscribeToTask")
            await asyncio.sleep(min(backoff, left))
            backoff = next_backoff(backoff)

    async def cancel(self, task_id: str) -> A2ATask:
        return A2ATask.from_proto(await self._call("CancelTask", a2a_pb2.CancelTaskRequest(
            id=check_id("task_id", task_id))))

    async def tasks(self, context_id: Optional[str] = None) -> AsyncIterator[A2ATask]:
        request = rq.a2a_tasks(context_id, None)
        while True:
            response = await self._call("ListTasks", request)
            for task in response.tasks:
                yield A2ATask.from_proto(task)
            if not response.next_page_token:
                return
            request.page_token = response.next_page_token


def _inherit_docstrings() -> None:
    """Gives each public method and property that has no docstring of its own that of its
    blocking twin in coordinator_client._client (same name, same meaning, awaited here), so
    that help() on the asyncio client documents it too."""
    for name in __all__:
        ours, theirs = globals()[name], getattr(_client, name)
        for attribute, value in vars(ours).items():
            if attribute.startswith("_") or getattr(value, "__doc__", None):
                continue
            twin = getattr(theirs, attribute, None)
            doc = getattr(twin, "__doc__", None)
            if doc and isinstance(value, property):
                value.__doc__ = doc
            elif doc and isinstance(value, staticmethod):
                value.__func__.__doc__ = doc
            elif doc and callable(value):
                value.__doc__ = doc


_inherit_docstrings()
