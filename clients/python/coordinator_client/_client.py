"""The blocking client: Coordinator and the services it groups.

Every call has a deadline: the Coordinator's `timeout` bounds one logical call, including its
retries. A call that fails with UNAVAILABLE (the coordinator is restarting, or not there yet) is
retried with backoff (50 ms doubling to 1 s) until that time is spent; then Unavailable is
raised. Any other failure raises its CoordinatorError subclass at once.

A retried write is sent again as a whole. gRPC answers UNAVAILABLE before the server has the
call when it cannot connect or when the server is draining (SIGTERM), which is when retrying
matters; a connection that breaks while the server works on a call (kill -9) leaves its outcome
unknown, and then a retried RecordCommand or AppendMessage may count twice. Callers that must
count exactly once read the count first (the example in examples/python/rcabench_state.py
does).

All objects are safe to use from several threads.
"""

from __future__ import annotations

import threading
import time
from typing import Any, Iterable, Iterator, List, Mapping, Optional, Tuple, TypeVar, Union

import grpc

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


class _Transport(TransportBase):
    """The channel, the metadata every call carries, and the retrying call."""

    def _open_channel(self, settings: ChannelSettings) -> grpc.Channel:
        if settings.credentials is None:
            return grpc.insecure_channel(self.target, options=settings.options)
        return grpc.secure_channel(self.target, settings.credentials, options=settings.options)

    def call(self, method: Any, name: str, request: Any, *,
             timeout: Optional[float] = None, metadata: Metadata = ()) -> Any:
        """Calls a unary method; retries UNAVAILABLE with backoff within the timeout."""
        retries = Retries(name, self.timeout if timeout is None else timeout)
        while True:
            try:
                return method(request, timeout=retries.attempt_timeout(),
                              metadata=self.metadata + metadata)
            except grpc.RpcError as error:
                pause = retries.pause_after(error, self.closed)
            time.sleep(pause)

    def run(self, stub: Any, call: rq.Call[T]) -> T:
        """Makes the call on the stub; returns the answer, decoded."""
        return call.decode(self.call(getattr(stub, call.method), call.name, call.request,
                                     timeout=call.timeout, metadata=call.metadata))

    def pages(self, stub: Any, listing: rq.Listing[T]) -> Iterator[T]:
        """The items of every page of a listing, fetched as they are consumed."""
        while not listing.done:
            yield from listing.page(self.call(getattr(stub, listing.method), listing.name,
                                              listing.request, metadata=listing.metadata))

    def close(self) -> None:
        self.closed = True
        self.channel.close()


class _Service:
    """A service's stub on the transport, and the calls made through it."""

    def __init__(self, transport: _Transport, service: str) -> None:
        self._t = transport
        self._stub = rq.STUBS[service](transport.channel)

    def _run(self, call: rq.Call[T]) -> T:
        return self._t.run(self._stub, call)

    def _pages(self, listing: rq.Listing[T]) -> Iterator[T]:
        return self._t.pages(self._stub, listing)


class Coordinator(CoordinatorBase):
    """A connection to the coordinator.

        with Coordinator("127.0.0.1:50051", token=None, tls_ca=None, timeout=10.0) as c:
            ctx = c.contexts.create("eval-1", agent="green", workspace_dir="/ws/eval-1")

    Args:
        target: host:port of the coordinator's gRPC port.
        token: bearer token sent as "authorization: Bearer <token>" on every call (default:
            none). token_file: read it from this file instead, as coordctl's
            --auth-token-file (the file holds the token alone).
        tls_ca: connect with TLS, trusting these PEM root certificates: a file path (as
            coordctl's --tls-ca-file) or the PEM bytes. Default: plaintext.
        timeout: seconds one call may take, its UNAVAILABLE retries included (default 10).
        tls_server_name: the name to check the server's certificate against, when it is not
            the one in target.
        options: further gRPC channel options.
    """

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

    def health(self, service: str = "") -> str:
        """grpc.health.v1 status of the server ("" ) or of one service: "SERVING",
        "NOT_SERVING", "SERVICE_UNKNOWN" or "UNKNOWN"."""
        return self._t.call(health_method(self._t.channel), "Health.Check",
                            check_str("service", service))

    def close(self) -> None:
        """Closes the channel; calls in flight are cancelled."""
        self._t.close()

    def __enter__(self) -> "Coordinator":
        return self

    def __exit__(self, *_: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Coordinator({self.target!r})"


# ---- Contexts ----

class Context(ContextFields):
    """A TaskContext as last read or written, with the calls that change it.

    The fields (context_id, agent, workspace_dir, labels, command_count, failed_commands,
    version, ...) are those of the last answer; record_command, update and refresh replace
    them and return this same object.
    """

    __slots__ = ("_contexts",)

    def __init__(self, contexts: "Contexts", proto: context_pb2.TaskContext) -> None:
        super().__init__(proto)
        self._contexts = contexts

    def record_command(self, command: str, exit_code: int = 0,
                       duration: Optional[Seconds] = None,
                       output_digest: str = "") -> "Context":
        """Counts one command (and a failure when exit_code != 0) and stores its record,
        atomically. duration: seconds or a timedelta. Returns this context, updated."""
        self._proto = self._contexts._run(rq.record_command(
            self.context_id, command, exit_code, duration, output_digest))
        return self

    def update(self, *, agent: Optional[str] = None, external_task_id: Optional[str] = None,
               workspace_dir: Optional[str] = None, shared_dir: Optional[str] = None,
               environment_handle: Optional[str] = None,
               status: Optional[Union[str, ContextStatus]] = None,
               labels: Optional[Mapping[str, Optional[str]]] = None,
               replace_labels: bool = False) -> "Context":
        """Changes the given fields (None leaves a field as it is).

        labels are merged into the current labels (a None value removes that label), or
        replace them all with replace_labels=True. The change is made at the version this
        object holds; when someone else changed the context in between (Conflict), the context
        is read again and the change made anew, until it lands or the timeout is spent, so
        concurrent updates never lose one another. Returns this context, updated.
        """
        changes = rq.context_changes(
            agent=agent, external_task_id=external_task_id, workspace_dir=workspace_dir,
            shared_dir=shared_dir, environment_handle=environment_handle, status=status,
            labels=labels, replace_labels=replace_labels)
        if not changes:
            return self
        update = rq.ContextUpdate(self._proto, changes, replace_labels, self._contexts._t.timeout)
        while True:
            try:
                self._proto = self._contexts._run(update.write())
                return self
            except Conflict:
                pause = update.pause_after_conflict()
                if pause is None:
                    raise
            time.sleep(pause)
            update.current = self._contexts._run(update.read())

    def refresh(self) -> "Context":
        """Reads the context again. NotFound when it was deleted."""
        self._proto = self._contexts._run(rq.get_context(self.context_id))
        return self

    def delete(self) -> None:
        """Deletes the context with its command records and conversation."""
        self._contexts.delete(self.context_id)

    def commands(self, page_size: Optional[int] = None) -> Iterator[CommandRecord]:
        """The recorded commands in order, paged transparently."""
        yield from self._contexts._pages(rq.list_commands(self.context_id, page_size))

    @property
    def conversation(self) -> "Conversation":
        """The conversation kept under this context_id."""
        return Conversation(self._contexts._t, self.context_id)


class Contexts(_Service):
    """The TaskContexts, by context_id, read and written like a dict.

        ctx = contexts.create("eval-1", agent="green", labels={"arvo_id": "14368"})
        "eval-1" in contexts; contexts["eval-1"]; contexts.get("eval-1")
        for ctx in contexts.values(agent="green", status="active"): ...
        del contexts["eval-1"]

    Mapping access raises KeyError (NotFound) for a missing context. Iteration pages
    through ListContexts as it goes; len() reads every page.
    """

    def __init__(self, transport: _Transport) -> None:
        super().__init__(transport, rq.CONTEXTS)

    def create(self, context_id: str, *, agent: str = "", external_task_id: str = "",
               workspace_dir: str = "", shared_dir: str = "", environment_handle: str = "",
               status: Optional[Union[str, ContextStatus]] = None,
               labels: Optional[Mapping[str, str]] = None,
               parties: Optional[Iterable[str]] = None) -> Context:
        """Creates a context (status "active" unless given). AlreadyExists when the id is
        taken."""
        return Context(self, self._run(rq.create_context(
            context_id, agent=agent, external_task_id=external_task_id,
            workspace_dir=workspace_dir, shared_dir=shared_dir,
            environment_handle=environment_handle, status=status, labels=labels,
            parties=parties)))

    def __getitem__(self, context_id: str) -> Context:
        return Context(self, self._run(rq.get_context(context_id)))

    def get(self, context_id: str, default: Optional[Context] = None) -> Optional[Context]:
        """The context, or default (None) when there is none."""
        try:
            return self[context_id]
        except NotFound:
            return default

    def __contains__(self, context_id: object) -> bool:
        return self.get(context_id) is not None  # type: ignore[arg-type]

    def delete(self, context_id: str, version: int = 0) -> None:
        """Deletes a context with its command records and conversation. With a version, only
        when the context is still at it (else Conflict). NotFound when there is none."""
        self._run(rq.delete_context(context_id, version))

    def __delitem__(self, context_id: str) -> None:
        self.delete(context_id)

    def values(self, agent: Optional[str] = None,
               status: Optional[Union[str, ContextStatus]] = None,
               page_size: Optional[int] = None) -> Iterator[Context]:
        """Every context (of one agent, in one status), in context_id order, paged
        transparently (page_size per call; the server's default when None)."""
        for proto in self._pages(rq.list_contexts(agent, status, page_size)):
            yield Context(self, proto)

    def keys(self, agent: Optional[str] = None,
             status: Optional[Union[str, ContextStatus]] = None) -> Iterator[str]:
        """The context_ids of values(agent, status)."""
        return (c.context_id for c in self.values(agent, status))

    def items(self, agent: Optional[str] = None,
              status: Optional[Union[str, ContextStatus]] = None
              ) -> Iterator[Tuple[str, Context]]:
        """(context_id, context) pairs of values(agent, status)."""
        return ((c.context_id, c) for c in self.values(agent, status))

    def __iter__(self) -> Iterator[str]:
        return self.keys()

    def __len__(self) -> int:
        return sum(1 for _ in self.values(page_size=1000))


# ---- Conversations ----

class Conversation(_Service):
    """The conversation kept under one context_id: one record per message, with step_count
    (the agent's messages), message_count and total_tokens. It begins with its first append; reading one that has no messages
    raises NotFound (a KeyError)."""

    def __init__(self, transport: _Transport, context_id: str) -> None:
        super().__init__(transport, rq.CONVERSATIONS)
        self.context_id = check_id("context_id", context_id)

    def append(self, role: Union[str, Role], text: str, tokens: int = 0) -> Totals:
        """Appends one message ("user", "agent" or "system") and returns the conversation's
        Totals after it: (step_count, total_tokens), and message_count, which is the
        message's seq. An "agent" message is one more step."""
        return self._run(rq.append_message(self.context_id, role, text, tokens))

    def messages(self, tail: Optional[int] = None,
                 page_size: Optional[int] = None) -> List[Message]:
        """Every message in order, or the last `tail` of them."""
        return list(self._pages(rq.messages(self.context_id, tail, page_size)))

    def __iter__(self) -> Iterator[Message]:
        """Every message in order, a page at a time."""
        yield from self._pages(rq.messages(self.context_id, None, None))

    def totals(self) -> Totals:
        """Totals now: (step_count, total_tokens), and message_count."""
        return self._run(rq.totals(self.context_id))

    def __repr__(self) -> str:
        return f"Conversation({self.context_id!r})"


class Conversations:
    """Conversations by context_id: conversations[id] is the conversation's handle (no call:
    a conversation begins with its first append); `id in conversations` says whether it has
    messages."""

    def __init__(self, transport: _Transport) -> None:
        self._t = transport

    def __getitem__(self, context_id: str) -> Conversation:
        return Conversation(self._t, context_id)

    def __contains__(self, context_id: object) -> bool:
        try:
            Conversation(self._t, context_id).totals()  # type: ignore[arg-type]
            return True
        except NotFound:
            return False

    def get(self, context_id: str) -> Optional[Conversation]:
        """The conversation, or None when it has no messages."""
        return Conversation(self._t, context_id) if context_id in self else None


# ---- Retry state ----

class Task(_Service):
    """The retry state of one task (TaskStateService), by its id.

    id is the first 8 hex characters of the SHA-256 of the description; created says
    whether init made the state (None when the handle came from tasks[id]). tier and model
    are read from the coordinator each time.
    """

    def __init__(self, transport: _Transport, task_id: str,
                 created: Optional[bool] = None) -> None:
        super().__init__(transport, rq.TASK_STATE)
        self.id = check_id("task_id", task_id)
        self.created = created

    def attempt(self) -> int:
        """Counts an attempt; returns the attempt count. FailedPrecondition when the breaker
        blocked the task."""
        return self._run(rq.increment_attempt(self.id))

    def fail(self, error: str) -> TaskFailure:
        """Records a failure of the current attempt on the current tier."""
        return self._run(rq.record_failure(self.id, error))

    def escalate(self, reason: str = "", steps: int = 1) -> int:
        """Climbs the tier ladder (capped at the top) and logs why; returns the new tier."""
        return self._run(rq.escalate(self.id, reason, steps))

    @property
    def tier(self) -> int:
        """The current tier, 1 = the first model of the ladder."""
        return self._run(rq.get_tier(self.id)).model_tier

    @property
    def model(self) -> str:
        """The model of the current tier."""
        return self._run(rq.get_tier(self.id)).model

    def failure_context(self, tail: Optional[int] = None) -> str:
        """The failures as prompt text ("Previous failures:" and a line each; "" if none)."""
        return self._run(rq.failure_context(self.id, tail))

    def quality_gate(self, check: str, passed: bool, detail: str = "") -> QualityGateResult:
        """Records a quality-gate verdict."""
        return self._run(rq.quality_gate(self.id, check, passed, detail))

    def state(self) -> TaskState:
        """The whole state with its histories."""
        return self._run(rq.task_state(self.id))

    def get(self, field: str) -> str:
        """One field as text (known fields, or a custom one). NotFound for an unset custom
        field."""
        return self._run(rq.get_task_field(self.id, field))

    def set(self, field: str, value: Union[str, int]) -> str:
        """Sets a known or custom field; returns it as stored."""
        return self._run(rq.set_task_field(self.id, field, value))

    def cleanup(self) -> bool:
        """Removes the task's state and breaker records (admin); True when it was blocked."""
        return self._run(rq.cleanup_task(self.id))

    def __repr__(self) -> str:
        return f"Task({self.id!r})"


class Tasks(_Service):
    """Retry state of tasks, by task id: init(description) makes (or finds) a task's state;
    tasks[id] raises KeyError (NotFound) for an unknown one."""

    def __init__(self, transport: _Transport) -> None:
        super().__init__(transport, rq.TASK_STATE)

    @staticmethod
    def id_for(description: str) -> str:
        """The id init gives this description: sha256(description)[:8] in hex."""
        return task_id_of(description)

    def init(self, description: str) -> Task:
        """Returns the description's task, creating its state when there is none."""
        response = self._run(rq.init_task(description))
        return Task(self._t, response.task_id, response.created)

    def __getitem__(self, task_id: str) -> Task:
        self._run(rq.get_tier(task_id))
        return Task(self._t, task_id)

    def get(self, task_id: str) -> Optional[Task]:
        """The task's handle, or None when it has no state."""
        try:
            return self[task_id]
        except NotFound:
            return None

    def __contains__(self, task_id: object) -> bool:
        return self.get(task_id) is not None  # type: ignore[arg-type]

    def values(self, page_size: Optional[int] = None) -> Iterator[TaskSummary]:
        """Every task in task-id order, paged transparently."""
        yield from self._pages(rq.list_tasks(page_size))

    def __iter__(self) -> Iterator[str]:
        return (s.task_id for s in self.values())


# ---- Breaker ----

class Breaker(_Service):
    """The loop breaker. Each method takes a task id or a Task."""

    def __init__(self, transport: _Transport) -> None:
        super().__init__(transport, rq.BREAKER)

    def check(self, task: Union[str, Task], *, repeated_error: Optional[int] = None,
              stuck_tier: Optional[int] = None,
              quality_gate: Optional[int] = None) -> Optional[str]:
        """None, or the loop the task is in: "repeated_error", "stuck_tier" or
        "quality_gate_loop". The thresholds override the server's for this call."""
        return self._run(rq.check_loop(task, repeated_error, stuck_tier, quality_gate))

    def analyze(self, task: Union[str, Task], *, repeated_error: Optional[int] = None,
                stuck_tier: Optional[int] = None,
                quality_gate: Optional[int] = None) -> LoopAnalysis:
        """The full analysis with a suggested action."""
        return self._run(rq.analyze_loop(task, repeated_error, stuck_tier, quality_gate))

    def force_escalate(self, task: Union[str, Task], reason: str = "") -> ForceEscalation:
        """Jumps two tiers, or changes nothing near the top (human_intervention_required)."""
        return self._run(rq.force_escalate(task, reason))

    def break_task(self, task: Union[str, Task], reason: str = "") -> BlockedTask:
        """Blocks the task for a person, with a stored summary. AlreadyExists when it is
        blocked already."""
        return self._run(rq.break_task(task, reason))

    def status(self) -> List[BlockedTask]:
        """Every blocked task, in task-id order."""
        return self._run(rq.breaker_status())

    def summary(self, task: Union[str, Task]) -> str:
        """The summary stored when the task was blocked."""
        return self._run(rq.break_summary(task))

    def cleanup(self, task: Union[str, Task]) -> bool:
        """Unblocks and forgets the task (admin); True when it was blocked."""
        return self._run(rq.breaker_cleanup(task))

    def log(self, tail: Optional[int] = None) -> List[BreakerLogEntry]:
        """The breaker's log, oldest first (the last `tail` entries)."""
        return list(self._pages(rq.breaker_log(tail)))


# ---- Work ----

class ClaimedItem(rq.ClaimedItemBase):
    """A work item held under a lease. As a context manager it heartbeats in the background
    (every third of the lease) while the block runs, completes the item when the block ends
    and fails it (retryable) when the block raises:

        with coordinator.work.claim(run_id, worker="w1", ttl=30) as item:
            item.checkpoint("step 1 done")
            item.summary = "merged"          # sent with the completion

    When a heartbeat is refused (the lease was lost to another worker), `lost` becomes true
    and the completion at the end raises FailedPrecondition: stop working on the item.
    """

    def __init__(self, work: "Work", response: work_pb2.ClaimResponse, ttl: float) -> None:
        super().__init__(response, ttl)
        self._work = work
        self._lost = threading.Event()
        self._stop = threading.Event()
        self._heartbeats: Optional[threading.Thread] = None

    @property
    def lost(self) -> bool:
        """True once the coordinator refused this lease (the item is someone else's now)."""
        return self._lost.is_set()

    def _lease_call(self, call: rq.Call[T]) -> T:
        try:
            return self._work._run(call)
        except FailedPrecondition:
            self._lost.set()
            raise

    def heartbeat(self, progress: Optional[str] = None,
                  ttl: Optional[Seconds] = None) -> None:
        """Extends the lease (by its length, or a new ttl) and stores a progress payload."""
        self.lease_expire_time = self._lease_call(rq.heartbeat(self.lease, progress, ttl))

    def checkpoint(self, note: str) -> WorkItem:
        """Stores a note for whoever claims the item next."""
        return self._lease_call(rq.checkpoint(self.lease, note))

    def complete(self, summary: Optional[str] = None) -> WorkItem:
        """Marks the item done (safe to repeat with the same lease)."""
        return self._lease_call(self._complete(summary))

    def fail(self, error: str, retryable: bool = True) -> WorkItem:
        """Records a failed attempt: retried after a backoff (retryable), or failed for
        good."""
        return self._lease_call(self._fail(error, retryable))

    def _beat(self) -> None:
        while not self._stop.wait(self.ttl / 3):
            try:
                self.heartbeat(self.progress)
            except CoordinatorError as error:
                if self._heartbeat_failed(error):
                    return

    def __enter__(self) -> "ClaimedItem":
        self._heartbeats = threading.Thread(target=self._beat, daemon=True,
                                            name=f"heartbeat {self.item_id}")
        self._heartbeats.start()
        return self

    def __exit__(self, exc_type: Any, exc: Optional[BaseException], tb: Any) -> None:
        self._stop.set()
        if self._heartbeats is not None:
            self._heartbeats.join()
        if self._finished:
            return
        if exc is None:
            self.complete()
            return
        try:
            self.fail(rq.describe_exception(exc))
        except CoordinatorError as error:
            self._failing_failed(exc, error)

    def __repr__(self) -> str:
        return f"ClaimedItem({self.run_id!r}, {self.item_id!r}, epoch={self.epoch})"


class Work(_Service):
    """Runs of work items handed to workers under leases (docs/work.md)."""

    def __init__(self, transport: _Transport) -> None:
        super().__init__(transport, rq.WORK)

    def create_run(self, items: Iterable[Mapping[str, Any]], *, run_id: str = "",
                   kind: str = "workstreams", specs_dir: str = "", base_branch: str = "",
                   feature: str = "", max_attempts: Optional[int] = None,
                   backoff_base: Optional[Seconds] = None,
                   backoff_max: Optional[Seconds] = None,
                   non_retryable_errors: Optional[Iterable[str]] = None) -> Run:
        """Creates a run (admin). items: dicts with WorkItem's field names (item_id or id,
        title, description, level, dependencies, owned_files, branch, worktree, metadata)."""
        return self._run(rq.create_run(
            items, run_id=run_id, kind=kind, specs_dir=specs_dir, base_branch=base_branch,
            feature=feature, max_attempts=max_attempts, backoff_base=backoff_base,
            backoff_max=backoff_max, non_retryable_errors=non_retryable_errors))

    def import_task_graph(self, graph: Union[str, Mapping[str, Any]], *, run_id: str = "",
                          feature: str = "", max_attempts: Optional[int] = None,
                          backoff_base: Optional[Seconds] = None,
                          backoff_max: Optional[Seconds] = None,
                          non_retryable_errors: Optional[Iterable[str]] = None) -> Run:
        """Creates a task-graph run from task-graph.json (its text, or the parsed dict)."""
        return self._run(rq.import_task_graph(
            graph, run_id=run_id, feature=feature, max_attempts=max_attempts,
            backoff_base=backoff_base, backoff_max=backoff_max,
            non_retryable_errors=non_retryable_errors))

    def run(self, run_id: str) -> Run:
        """A run with its derived status and counts."""
        return self._run(rq.get_run(run_id))

    def runs(self) -> Iterator[Run]:
        """Every run in run_id order."""
        yield from self._pages(rq.list_runs())

    def items(self, run_id: str) -> Iterator[WorkItem]:
        """A run's items in item_id order."""
        yield from self._pages(rq.list_items(run_id))

    def item(self, run_id: str, item_id: str) -> WorkItem:
        """One item of a run, as stored now."""
        return self._run(rq.get_item(run_id, item_id))

    def retry(self, run_id: str, item_id: str) -> WorkItem:
        """Sends a blocked or failed item back to pending (admin)."""
        return self._run(rq.retry_item(run_id, item_id))

    def try_claim(self, run_id: str, worker: str, ttl: Seconds = 30.0) -> Optional[ClaimedItem]:
        """One claimable item under a lease of ttl seconds, or None."""
        call = rq.claim(run_id, worker, ttl)
        response = self._run(call)
        if not response.HasField("item"):
            return None
        return ClaimedItem(self, response, rq.claim_ttl(call))

    def claim(self, run_id: str, worker: str, ttl: Seconds = 30.0, *,
              wait: Seconds = 0.0) -> ClaimedItem:
        """Claims an item under a lease of ttl seconds; use it in a with-statement. With
        wait, keeps asking for up to that many seconds (at the backoff the run names). Raises
        NothingToClaim when there is no item (at once when the run is stalled)."""
        give_up = time.monotonic() + rq.claim_wait(wait)
        call = rq.claim(run_id, worker, ttl)
        while True:
            response = self._run(call)
            if response.HasField("item"):
                return ClaimedItem(self, response, rq.claim_ttl(call))
            time.sleep(rq.claim_pause(run_id, response, give_up))


# ---- A2A ----

class Agents(_Service):
    """The agents registered with the A2A gateway, by name."""

    def __init__(self, transport: _Transport) -> None:
        super().__init__(transport, rq.AGENTS)

    def register(self, name: str, endpoint: str = "", *, card_url: str = "",
                 description: str = "") -> Agent:
        """Registers (or re-registers) an agent at a gRPC endpoint host:port, or by the URL
        of its card."""
        return self._run(rq.register_agent(name, endpoint, card_url, description))

    def __getitem__(self, name: str) -> Agent:
        return self._run(rq.get_agent(name))

    def get(self, name: str) -> Optional[Agent]:
        """The registered agent, or None."""
        try:
            return self[name]
        except NotFound:
            return None

    def __contains__(self, name: object) -> bool:
        return self.get(name) is not None  # type: ignore[arg-type]

    def values(self) -> Iterator[Agent]:
        """Every registered agent, paged transparently."""
        yield from self._pages(rq.list_agents())

    def __iter__(self) -> Iterator[str]:
        return (a.name for a in self.values())

    def __delitem__(self, name: str) -> None:
        self._run(rq.delete_agent(name))


class A2A(_Service):
    """A2A tasks through the coordinator's gateway (lf.a2a.v1.A2AService): the agent is the
    tenant, and every message, task and event is stored before anyone is answered."""

    def __init__(self, transport: _Transport) -> None:
        super().__init__(transport, rq.A2A)

    def send(self, agent: str, text: str = "", *, wait: bool = False,
             wait_timeout: Seconds = 300.0, context_id: Optional[str] = None,
             task_id: Optional[str] = None, data: Optional[Mapping[str, Any]] = None,
             metadata: Optional[Mapping[str, Any]] = None) -> A2ATask:
        """Sends a user message (text, and a data part when given) to `agent` and returns the
        stored task. context_id: the conversation (default: a new one); task_id: continue that
        task. wait: return only once the task has ended or asks for input, waiting up to
        wait_timeout seconds (DeadlineExceeded after that)."""
        check_bool("wait", wait)
        task = self._run(rq.a2a_send(agent, text, context_id=context_id, task_id=task_id,
                                     data=data, metadata=metadata))
        if not wait:
            return A2ATask.from_proto(task)
        return self.wait(task.id, timeout=wait_timeout)

    def get(self, task_id: str, history_length: Optional[int] = None) -> A2ATask:
        """The stored task (its last history_length messages; all when None)."""
        return self._run(rq.a2a_get(task_id, history_length))

    def wait(self, task_id: str, timeout: Seconds = 300.0) -> A2ATask:
        """Waits until the task has ended or asks for input (it follows the task's events, and
        resubscribes across coordinator restarts); returns it as stored."""
        wait = rq.TaskWait(task_id, timeout)
        while True:
            stream = wait.subscribe(self._stub, self._t.metadata)
            try:
                for event in stream:
                    if wait.ends(event):
                        break
            except grpc.RpcError as error:
                wait.refused(error)
            finally:
                stream.cancel()
            try:
                task: Optional[A2ATask] = self.get(task_id)
            except (Unavailable, Cancelled):
                task = None
            if task is not None and task.done:
                return task
            time.sleep(wait.pause())

    def cancel(self, task_id: str) -> A2ATask:
        """Cancels the task (at its agent when it runs there)."""
        return self._run(rq.a2a_cancel(task_id))

    def tasks(self, context_id: Optional[str] = None) -> Iterator[A2ATask]:
        """Every stored task (of one context), paged transparently."""
        yield from self._pages(rq.a2a_tasks(context_id, None))


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
