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
    Tuple,
    TypeVar,
    Union,
)

import grpc
import grpc.aio

from coordinator_client import _client
from coordinator_client import _requests as rq
from coordinator_client._channel import (
    ChannelSettings,
    CoordinatorBase,
    Metadata,
    Retries,
    TransportBase,
    health_method,
)
from coordinator_client._errors import (
    Cancelled,
    Conflict,
    CoordinatorError,
    FailedPrecondition,
    NotFound,
    Unavailable,
)
from coordinator_client._stubs import context_pb2, work_pb2
from coordinator_client._values import (
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
    check_str,
    task_id_of,
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


class _Transport(TransportBase):
    """The grpc.aio channel, the metadata every call carries, and the retrying call."""

    def _open_channel(self, settings: ChannelSettings) -> grpc.aio.Channel:
        if settings.credentials is None:
            return grpc.aio.insecure_channel(self.target, options=settings.options)
        return grpc.aio.secure_channel(self.target, settings.credentials,
                                       options=settings.options)

    async def call(self, method: Any, name: str, request: Any, *,
                   timeout: Optional[float] = None, metadata: Metadata = ()) -> Any:
        """Calls a unary method; retries UNAVAILABLE with backoff within the timeout."""
        retries = Retries(name, self.timeout if timeout is None else timeout)
        while True:
            try:
                return await method(request, timeout=retries.attempt_timeout(),
                                    metadata=self.metadata + metadata)
            except grpc.aio.AioRpcError as error:
                pause = retries.pause_after(error, self.closed)
            await asyncio.sleep(pause)

    async def run(self, stub: Any, call: rq.Call[T]) -> T:
        """Makes the call on the stub; returns the answer, decoded."""
        return call.decode(await self.call(getattr(stub, call.method), call.name, call.request,
                                           timeout=call.timeout, metadata=call.metadata))

    async def pages(self, stub: Any, listing: rq.Listing[T]) -> AsyncIterator[T]:
        """The items of every page of a listing, fetched as they are consumed."""
        while not listing.done:
            for item in listing.page(await self.call(
                    getattr(stub, listing.method), listing.name, listing.request,
                    metadata=listing.metadata)):
                yield item

    async def close(self) -> None:
        self.closed = True
        await self.channel.close()


class _Service:
    """A service's stub on the transport, and the coroutines that make calls through it."""

    def __init__(self, transport: _Transport, service: str) -> None:
        self._t = transport
        self._stub = rq.STUBS[service](transport.channel)

    async def _run(self, call: rq.Call[T]) -> T:
        return await self._t.run(self._stub, call)

    def _pages(self, listing: rq.Listing[T]) -> AsyncIterator[T]:
        return self._t.pages(self._stub, listing)


class Coordinator(CoordinatorBase):
    """A grpc.aio connection to the coordinator; the arguments are those of
    coordinator_client.Coordinator. Make it inside a running event loop."""

    _t: _Transport

    def _connect(self, settings: ChannelSettings) -> None:
        self._t = _Transport(settings)
        self.contexts = Contexts(self._t)
        self.conversations = Conversations(self._t)
        self.tasks = Tasks(self._t)
        self.breaker = Breaker(self._t)
        self.work = Work(self._t)
        self.a2a = A2A(self._t)
        self.agents = Agents(self._t)

    async def health(self, service: str = "") -> str:
        """grpc.health.v1 status: "SERVING", "NOT_SERVING", "SERVICE_UNKNOWN" or "UNKNOWN"."""
        return await self._t.call(health_method(self._t.channel), "Health.Check",
                                  check_str("service", service))

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
        self._proto = await self._contexts._run(rq.record_command(
            self.context_id, command, exit_code, duration, output_digest))
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
        update = rq.ContextUpdate(self._proto, changes, replace_labels, self._contexts._t.timeout)
        while True:
            try:
                self._proto = await self._contexts._run(update.write())
                return self
            except Conflict:
                pause = update.pause_after_conflict()
                if pause is None:
                    raise
            await asyncio.sleep(pause)
            update.current = await self._contexts._run(update.read())

    async def refresh(self) -> "Context":
        self._proto = await self._contexts._run(rq.get_context(self.context_id))
        return self

    async def delete(self) -> None:
        await self._contexts.delete(self.context_id)

    async def commands(self, page_size: Optional[int] = None) -> List[CommandRecord]:
        return [record async for record in self._contexts._pages(
            rq.list_commands(self.context_id, page_size))]

    @property
    def conversation(self) -> "Conversation":
        return Conversation(self._contexts._t, self.context_id)


class Contexts(_Service):
    """The TaskContexts by context_id (see coordinator_client.Contexts)."""

    def __init__(self, transport: _Transport) -> None:
        super().__init__(transport, rq.CONTEXTS)

    async def create(self, context_id: str, *, agent: str = "", external_task_id: str = "",
                     workspace_dir: str = "", shared_dir: str = "",
                     environment_handle: str = "",
                     status: Optional[Union[str, ContextStatus]] = None,
                     labels: Optional[Mapping[str, str]] = None,
                     parties: Optional[Iterable[str]] = None) -> Context:
        return Context(self, await self._run(rq.create_context(
            context_id, agent=agent, external_task_id=external_task_id,
            workspace_dir=workspace_dir, shared_dir=shared_dir,
            environment_handle=environment_handle, status=status, labels=labels,
            parties=parties)))

    def __getitem__(self, context_id: str) -> Awaitable[Context]:
        """`await contexts[id]`: the context; KeyError (NotFound) when there is none."""
        call = rq.get_context(context_id)

        async def read() -> Context:
            return Context(self, await self._run(call))
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
        await self._run(rq.delete_context(context_id, version))

    async def values(self, agent: Optional[str] = None,
                     status: Optional[Union[str, ContextStatus]] = None,
                     page_size: Optional[int] = None) -> AsyncIterator[Context]:
        async for proto in self._pages(rq.list_contexts(agent, status, page_size)):
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

class Conversation(_Service):
    """The conversation under one context_id (see coordinator_client.Conversation)."""

    def __init__(self, transport: _Transport, context_id: str) -> None:
        super().__init__(transport, rq.CONVERSATIONS)
        self.context_id = check_id("context_id", context_id)

    async def append(self, role: Union[str, Role], text: str, tokens: int = 0) -> Totals:
        return await self._run(rq.append_message(self.context_id, role, text, tokens))

    async def messages(self, tail: Optional[int] = None,
                       page_size: Optional[int] = None) -> List[Message]:
        return [m async for m in self._pages(rq.messages(self.context_id, tail, page_size))]

    async def __aiter__(self) -> AsyncIterator[Message]:
        async for message in self._pages(rq.messages(self.context_id, None, None)):
            yield message

    async def totals(self) -> Totals:
        return await self._run(rq.totals(self.context_id))

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

class Task(_Service):
    """The retry state of one task (see coordinator_client.Task); `await t.tier`."""

    def __init__(self, transport: _Transport, task_id: str,
                 created: Optional[bool] = None) -> None:
        super().__init__(transport, rq.TASK_STATE)
        self.id = check_id("task_id", task_id)
        self.created = created

    async def attempt(self) -> int:
        return await self._run(rq.increment_attempt(self.id))

    async def fail(self, error: str) -> TaskFailure:
        return await self._run(rq.record_failure(self.id, error))

    async def escalate(self, reason: str = "", steps: int = 1) -> int:
        return await self._run(rq.escalate(self.id, reason, steps))

    @property
    def tier(self) -> Awaitable[int]:
        """`await t.tier`: the current tier."""
        async def read() -> int:
            return (await self._run(rq.get_tier(self.id))).model_tier
        return read()

    @property
    def model(self) -> Awaitable[str]:
        """`await t.model`: the model of the current tier."""
        async def read() -> str:
            return (await self._run(rq.get_tier(self.id))).model
        return read()

    async def failure_context(self, tail: Optional[int] = None) -> str:
        return await self._run(rq.failure_context(self.id, tail))

    async def quality_gate(self, check: str, passed: bool,
                           detail: str = "") -> QualityGateResult:
        return await self._run(rq.quality_gate(self.id, check, passed, detail))

    async def state(self) -> TaskState:
        return await self._run(rq.task_state(self.id))

    async def get(self, field: str) -> str:
        return await self._run(rq.get_task_field(self.id, field))

    async def set(self, field: str, value: Union[str, int]) -> str:
        return await self._run(rq.set_task_field(self.id, field, value))

    async def cleanup(self) -> bool:
        return await self._run(rq.cleanup_task(self.id))

    def __repr__(self) -> str:
        return f"aio.Task({self.id!r})"


class Tasks(_Service):
    """Retry state of tasks by id (see coordinator_client.Tasks)."""

    def __init__(self, transport: _Transport) -> None:
        super().__init__(transport, rq.TASK_STATE)

    @staticmethod
    def id_for(description: str) -> str:
        return task_id_of(description)

    async def init(self, description: str) -> Task:
        response = await self._run(rq.init_task(description))
        return Task(self._t, response.task_id, response.created)

    def __getitem__(self, task_id: str) -> Awaitable[Task]:
        call = rq.get_tier(task_id)

        async def read() -> Task:
            await self._run(call)
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
        async for summary in self._pages(rq.list_tasks(page_size)):
            yield summary


# ---- Breaker ----

class Breaker(_Service):
    """The loop breaker (see coordinator_client.Breaker)."""

    def __init__(self, transport: _Transport) -> None:
        super().__init__(transport, rq.BREAKER)

    async def check(self, task: Union[str, Task], *, repeated_error: Optional[int] = None,
                    stuck_tier: Optional[int] = None,
                    quality_gate: Optional[int] = None) -> Optional[str]:
        return await self._run(rq.check_loop(task, repeated_error, stuck_tier, quality_gate))

    async def analyze(self, task: Union[str, Task], *, repeated_error: Optional[int] = None,
                      stuck_tier: Optional[int] = None,
                      quality_gate: Optional[int] = None) -> LoopAnalysis:
        return await self._run(rq.analyze_loop(task, repeated_error, stuck_tier, quality_gate))

    async def force_escalate(self, task: Union[str, Task], reason: str = "") -> ForceEscalation:
        return await self._run(rq.force_escalate(task, reason))

    async def break_task(self, task: Union[str, Task], reason: str = "") -> BlockedTask:
        return await self._run(rq.break_task(task, reason))

    async def status(self) -> List[BlockedTask]:
        return await self._run(rq.breaker_status())

    async def summary(self, task: Union[str, Task]) -> str:
        return await self._run(rq.break_summary(task))

    async def cleanup(self, task: Union[str, Task]) -> bool:
        return await self._run(rq.breaker_cleanup(task))

    async def log(self, tail: Optional[int] = None) -> List[BreakerLogEntry]:
        return [entry async for entry in self._pages(rq.breaker_log(tail))]


# ---- Work ----

class ClaimedItem(rq.ClaimedItemBase):
    """A work item held under a lease (see coordinator_client.ClaimedItem); `async with`
    heartbeats in a background task, completes on exit and fails on an exception."""

    def __init__(self, work: "Work", response: work_pb2.ClaimResponse, ttl: float) -> None:
        super().__init__(response, ttl)
        self._work = work
        self._lost = False
        self._heartbeats: Optional[asyncio.Task[None]] = None

    @property
    def lost(self) -> bool:
        return self._lost

    async def _lease_call(self, call: rq.Call[T]) -> T:
        try:
            return await self._work._run(call)
        except FailedPrecondition:
            self._lost = True
            raise

    async def heartbeat(self, progress: Optional[str] = None,
                        ttl: Optional[Seconds] = None) -> None:
        self.lease_expire_time = await self._lease_call(rq.heartbeat(self.lease, progress, ttl))

    async def checkpoint(self, note: str) -> WorkItem:
        return await self._lease_call(rq.checkpoint(self.lease, note))

    async def complete(self, summary: Optional[str] = None) -> WorkItem:
        return await self._lease_call(self._complete(summary))

    async def fail(self, error: str, retryable: bool = True) -> WorkItem:
        return await self._lease_call(self._fail(error, retryable))

    async def _beat(self) -> None:
        while True:
            await asyncio.sleep(self.ttl / 3)
            try:
                await self.heartbeat(self.progress)
            except CoordinatorError as error:
                if self._heartbeat_failed(error):
                    return

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
            self._failing_failed(exc, error)

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


class Work(_Service):
    """Runs of work items handed to workers under leases (see coordinator_client.Work)."""

    def __init__(self, transport: _Transport) -> None:
        super().__init__(transport, rq.WORK)

    async def create_run(self, items: Iterable[Mapping[str, Any]], *, run_id: str = "",
                         kind: str = "workstreams", specs_dir: str = "", base_branch: str = "",
                         feature: str = "", max_attempts: Optional[int] = None,
                         backoff_base: Optional[Seconds] = None,
                         backoff_max: Optional[Seconds] = None,
                         non_retryable_errors: Optional[Iterable[str]] = None) -> Run:
        return await self._run(rq.create_run(
            items, run_id=run_id, kind=kind, specs_dir=specs_dir, base_branch=base_branch,
            feature=feature, max_attempts=max_attempts, backoff_base=backoff_base,
            backoff_max=backoff_max, non_retryable_errors=non_retryable_errors))

    async def import_task_graph(self, graph: Union[str, Mapping[str, Any]], *, run_id: str = "",
                                feature: str = "", max_attempts: Optional[int] = None,
                                backoff_base: Optional[Seconds] = None,
                                backoff_max: Optional[Seconds] = None,
                                non_retryable_errors: Optional[Iterable[str]] = None) -> Run:
        return await self._run(rq.import_task_graph(
            graph, run_id=run_id, feature=feature, max_attempts=max_attempts,
            backoff_base=backoff_base, backoff_max=backoff_max,
            non_retryable_errors=non_retryable_errors))

    async def run(self, run_id: str) -> Run:
        return await self._run(rq.get_run(run_id))

    async def runs(self) -> AsyncIterator[Run]:
        async for run in self._pages(rq.list_runs()):
            yield run

    async def items(self, run_id: str) -> AsyncIterator[WorkItem]:
        async for item in self._pages(rq.list_items(run_id)):
            yield item

    async def item(self, run_id: str, item_id: str) -> WorkItem:
        return await self._run(rq.get_item(run_id, item_id))

    async def retry(self, run_id: str, item_id: str) -> WorkItem:
        return await self._run(rq.retry_item(run_id, item_id))

    async def try_claim(self, run_id: str, worker: str,
                        ttl: Seconds = 30.0) -> Optional[ClaimedItem]:
        call = rq.claim(run_id, worker, ttl)
        response = await self._run(call)
        if not response.HasField("item"):
            return None
        return ClaimedItem(self, response, rq.claim_ttl(call))

    def claim(self, run_id: str, worker: str, ttl: Seconds = 30.0, *,
              wait: Seconds = 0.0) -> _Claim:
        """`await c.work.claim(...)` or `async with c.work.claim(...) as item`; raises
        NothingToClaim as the blocking claim does."""
        call = rq.claim(run_id, worker, ttl)
        wait_seconds = rq.claim_wait(wait)

        async def make() -> ClaimedItem:
            give_up = time.monotonic() + wait_seconds
            while True:
                response = await self._run(call)
                if response.HasField("item"):
                    return ClaimedItem(self, response, rq.claim_ttl(call))
                await asyncio.sleep(rq.claim_pause(run_id, response, give_up))
        return _Claim(make)


# ---- A2A ----

class Agents(_Service):
    """The agents registered with the A2A gateway (see coordinator_client.Agents)."""

    def __init__(self, transport: _Transport) -> None:
        super().__init__(transport, rq.AGENTS)

    async def register(self, name: str, endpoint: str = "", *, card_url: str = "",
                       description: str = "") -> Agent:
        return await self._run(rq.register_agent(name, endpoint, card_url, description))

    def __getitem__(self, name: str) -> Awaitable[Agent]:
        return self._run(rq.get_agent(name))

    async def get(self, name: str) -> Optional[Agent]:
        try:
            return await self[name]
        except NotFound:
            return None

    async def contains(self, name: str) -> bool:
        """`name in agents`: whether the agent is registered."""
        return await self.get(name) is not None

    async def values(self) -> AsyncIterator[Agent]:
        async for agent in self._pages(rq.list_agents()):
            yield agent

    async def delete(self, name: str) -> None:
        """`del agents[name]`: unregisters the agent."""
        await self._run(rq.delete_agent(name))


class A2A(_Service):
    """A2A tasks through the coordinator's gateway (see coordinator_client.A2A)."""

    def __init__(self, transport: _Transport) -> None:
        super().__init__(transport, rq.A2A)

    async def send(self, agent: str, text: str = "", *, wait: bool = False,
                   wait_timeout: Seconds = 300.0, context_id: Optional[str] = None,
                   task_id: Optional[str] = None, data: Optional[Mapping[str, Any]] = None,
                   metadata: Optional[Mapping[str, Any]] = None) -> A2ATask:
        check_bool("wait", wait)
        task = await self._run(rq.a2a_send(agent, text, context_id=context_id,
                                           task_id=task_id, data=data, metadata=metadata))
        if not wait:
            return A2ATask.from_proto(task)
        return await self.wait(task.id, timeout=wait_timeout)

    async def get(self, task_id: str, history_length: Optional[int] = None) -> A2ATask:
        return await self._run(rq.a2a_get(task_id, history_length))

    async def wait(self, task_id: str, timeout: Seconds = 300.0) -> A2ATask:
        wait = rq.TaskWait(task_id, timeout)
        while True:
            stream = wait.subscribe(self._stub, self._t.metadata)
            try:
                async for event in stream:
                    if wait.ends(event):
                        break
            except grpc.aio.AioRpcError as error:
                wait.refused(error)
            finally:
                stream.cancel()
            try:
                task: Optional[A2ATask] = await self.get(task_id)
            except (Unavailable, Cancelled):
                task = None
            if task is not None and task.done:
                return task
            await asyncio.sleep(wait.pause())

    async def cancel(self, task_id: str) -> A2ATask:
        return await self._run(rq.a2a_cancel(task_id))

    async def tasks(self, context_id: Optional[str] = None) -> AsyncIterator[A2ATask]:
        async for task in self._pages(rq.a2a_tasks(context_id, None)):
            yield task


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
