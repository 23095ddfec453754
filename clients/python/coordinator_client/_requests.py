"""Request builders shared by the blocking and the asyncio client.

Each checks its arguments (TypeError / ValueError before anything is sent) and returns the
request proto; the two clients differ only in how they send it.
"""

from __future__ import annotations

import json
import uuid
from typing import Any, Dict, Iterable, Mapping, Optional, Tuple, Union

from google.protobuf import json_format, struct_pb2

from coordinator_client._stubs import (
    a2a_pb2,
    agent_registry_pb2,
    breaker_pb2,
    context_pb2,
    conversation_pb2,
    task_state_pb2,
    work_pb2,
)
from coordinator_client._values import (
    INT32_MAX,
    INT64_MAX,
    ContextStatus,
    Role,
    Seconds,
    check_bool,
    check_id,
    check_int,
    check_labels,
    check_positive_seconds,
    check_str,
    check_str_list,
    duration_proto,
    retry_policy_proto,
    role_to_proto,
    status_to_proto,
    thresholds_proto,
    work_item_proto,
)

# TaskContext fields UpdateContext may change, in the order of the proto.
CONTEXT_FIELDS = ("agent", "external_task_id", "workspace_dir", "shared_dir",
                  "environment_handle")


def task_id_arg(task: Any) -> str:
    """A task id, or the id of a Task handle."""
    task_id = getattr(task, "id", task)
    return check_id("task_id", task_id)


def page_size_arg(page_size: Optional[int]) -> int:
    return 0 if page_size is None else check_int("page_size", page_size, 1, INT32_MAX)


# ---- Contexts ----

def create_context(context_id: str, *, agent: str, external_task_id: str, workspace_dir: str,
                   shared_dir: str, environment_handle: str,
                   status: Optional[Union[str, ContextStatus]],
                   labels: Optional[Mapping[str, str]],
                   parties: Optional[Iterable[str]]) -> context_pb2.CreateContextRequest:
    context = context_pb2.TaskContext(
        context_id=check_id("context_id", context_id), agent=check_str("agent", agent),
        external_task_id=check_str("external_task_id", external_task_id),
        workspace_dir=check_str("workspace_dir", workspace_dir),
        shared_dir=check_str("shared_dir", shared_dir),
        environment_handle=check_str("environment_handle", environment_handle))
    if status is not None:
        context.status = status_to_proto(status)
    if labels is not None:
        context.labels.update(check_labels(labels, allow_none_values=False))  # type: ignore
    if parties is not None:
        context.parties.extend(check_str_list("parties", parties))
    return context_pb2.CreateContextRequest(context=context)


def context_changes(*, agent: Optional[str], external_task_id: Optional[str],
                    workspace_dir: Optional[str], shared_dir: Optional[str],
                    environment_handle: Optional[str],
                    status: Optional[Union[str, ContextStatus]],
                    labels: Optional[Mapping[str, Optional[str]]],
                    replace_labels: bool) -> Dict[str, Any]:
    """The changes of Context.update, checked; None means "leave as it is"."""
    check_bool("replace_labels", replace_labels)
    changes: Dict[str, Any] = {}
    values = dict(agent=agent, external_task_id=external_task_id, workspace_dir=workspace_dir,
                  shared_dir=shared_dir, environment_handle=environment_handle)
    for name in CONTEXT_FIELDS:
        if values[name] is not None:
            changes[name] = check_str(name, values[name])
    if status is not None:
        changes["status"] = status_to_proto(status)
    if labels is not None:
        changes["labels"] = check_labels(labels, allow_none_values=not replace_labels)
    elif replace_labels:
        raise ValueError("replace_labels needs labels")
    return changes


def update_context(current: context_pb2.TaskContext, changes: Mapping[str, Any],
                   replace_labels: bool) -> context_pb2.UpdateContextRequest:
    """UpdateContext of `changes` onto `current` at its version. Labels are merged into the
    current ones (a None value removes a label) unless replace_labels."""
    request = context_pb2.UpdateContextRequest()
    context = request.context
    context.context_id = current.context_id
    context.version = current.version
    for name, value in changes.items():
        if name == "labels":
            labels: Dict[str, str] = {} if replace_labels else dict(current.labels)
            for key, label in value.items():
                if label is None:
                    labels.pop(key, None)
                else:
                    labels[key] = label
            context.labels.update(labels)
        else:
            setattr(context, name, value)
        request.update_mask.paths.append(name)
    return request


def record_command(context_id: str, command: str, exit_code: int,
                   duration: Optional[Seconds],
                   output_digest: str) -> context_pb2.RecordCommandRequest:
    # One request id per command, sent again with every retry of this request: the coordinator
    # answers a retry whose original landed from the record instead of counting it twice.
    request = context_pb2.RecordCommandRequest(
        context_id=check_id("context_id", context_id), command=check_str("command", command),
        exit_code=check_int("exit_code", exit_code, -2**31, INT32_MAX),
        output_digest=check_str("output_digest", output_digest),
        request_id=str(uuid.uuid4()))
    if duration is not None:
        request.duration.CopyFrom(duration_proto("duration", duration))
    return request


def list_contexts(agent: Optional[str], status: Optional[Union[str, ContextStatus]],
                  page_size: Optional[int]) -> context_pb2.ListContextsRequest:
    request = context_pb2.ListContextsRequest(page_size=page_size_arg(page_size))
    if agent is not None:
        request.agent = check_str("agent", agent)
    if status is not None:
        request.status = status_to_proto(status)
    return request


# ---- Conversations ----

def append_message(context_id: str, role: Union[str, Role], text: str,
                   tokens: int) -> conversation_pb2.AppendMessageRequest:
    # One request id per message, as record_command does.
    return conversation_pb2.AppendMessageRequest(
        context_id=check_id("context_id", context_id), role=role_to_proto(role),
        text=check_str("text", text), tokens=check_int("tokens", tokens, 0, INT64_MAX),
        request_id=str(uuid.uuid4()))


def get_conversation(context_id: str, tail: Optional[int],
                     page_size: Optional[int]) -> conversation_pb2.GetConversationRequest:
    request = conversation_pb2.GetConversationRequest(
        context_id=check_id("context_id", context_id), page_size=page_size_arg(page_size))
    if tail is not None:
        request.tail = check_int("tail", tail, 1, INT64_MAX)
    return request


# ---- Retry state and breaker ----

def escalate(task: Any, reason: str, steps: int) -> task_state_pb2.EscalateRequest:
    return task_state_pb2.EscalateRequest(
        task_id=task_id_arg(task), reason=check_str("reason", reason),
        steps=check_int("steps", steps, 1, INT32_MAX))


def tail_arg(tail: Optional[int]) -> int:
    return 0 if tail is None else check_int("tail", tail, 1, INT32_MAX)


def field_value(value: Any) -> str:
    """SetTaskField takes text: numbers in decimal."""
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise TypeError(f"value must be a str or an int, not {type(value).__name__}")
    return check_str("value", value) if isinstance(value, str) else str(value)


def loop_request(cls: Any, task: Any, repeated_error: Optional[int], stuck_tier: Optional[int],
                 quality_gate: Optional[int]) -> Any:
    return cls(task_id=task_id_arg(task),
               thresholds=thresholds_proto(repeated_error, stuck_tier, quality_gate))


# ---- Work ----

def create_run(items: Iterable[Any], *, run_id: str, kind: str, specs_dir: str,
               base_branch: str, feature: str, max_attempts: Optional[int],
               backoff_base: Optional[Seconds], backoff_max: Optional[Seconds],
               non_retryable_errors: Optional[Iterable[str]]) -> work_pb2.CreateRunRequest:
    kinds = {"workstreams": work_pb2.RUN_KIND_WORKSTREAMS,
             "task_graph": work_pb2.RUN_KIND_TASK_GRAPH}
    check_str("kind", kind)
    if kind not in kinds:
        raise ValueError(f"kind must be 'workstreams' or 'task_graph', not {kind!r}")
    if isinstance(items, (str, bytes, Mapping)) or not isinstance(items, Iterable):
        raise TypeError(f"items must be a list of dicts, not {type(items).__name__}")
    run = work_pb2.Run(run_id=check_str("run_id", run_id), kind=kinds[kind],
                       specs_dir=check_str("specs_dir", specs_dir),
                       base_branch=check_str("base_branch", base_branch),
                       feature=check_str("feature", feature),
                       retry_policy=retry_policy_proto(max_attempts, backoff_base, backoff_max,
                                                       non_retryable_errors))
    return work_pb2.CreateRunRequest(
        run=run, items=[work_item_proto(item, i) for i, item in enumerate(items)])


def import_task_graph(graph: Union[str, Mapping[str, Any]], *, run_id: str, feature: str,
                      max_attempts: Optional[int], backoff_base: Optional[Seconds],
                      backoff_max: Optional[Seconds],
                      non_retryable_errors: Optional[Iterable[str]]
                      ) -> work_pb2.ImportTaskGraphRequest:
    request = work_pb2.ImportTaskGraphRequest(
        run_id=check_str("run_id", run_id), feature=check_str("feature", feature),
        retry_policy=retry_policy_proto(max_attempts, backoff_base, backoff_max,
                                        non_retryable_errors))
    if isinstance(graph, str):
        request.graph_json = graph
    elif isinstance(graph, Mapping):
        request.graph_json = json.dumps(graph)
    else:
        raise TypeError(f"graph must be task-graph.json text or a dict, not "
                        f"{type(graph).__name__}")
    return request


def claim(run_id: str, worker: str, ttl: Seconds) -> work_pb2.ClaimRequest:
    check_positive_seconds("ttl", ttl)
    return work_pb2.ClaimRequest(run_id=check_id("run_id", run_id),
                                 worker_id=check_id("worker", worker),
                                 lease_ttl=duration_proto("ttl", ttl))


def heartbeat(lease: str, progress: Optional[str],
              ttl: Optional[Seconds]) -> work_pb2.HeartbeatRequest:
    request = work_pb2.HeartbeatRequest(lease=lease)
    if progress is not None:
        request.progress = check_str("progress", progress)
    if ttl is not None:
        check_positive_seconds("ttl", ttl)
        request.lease_ttl.CopyFrom(duration_proto("ttl", ttl))
    return request


def describe_exception(error: BaseException) -> str:
    """The error text a failed work item gets from the exception that ended its with-block."""
    text = str(error)
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


# ---- A2A ----

def a2a_send(agent: str, text: str, *, context_id: Optional[str], task_id: Optional[str],
             data: Optional[Mapping[str, Any]],
             metadata: Optional[Mapping[str, Any]]) -> a2a_pb2.SendMessageRequest:
    request = a2a_pb2.SendMessageRequest(tenant=check_str("agent", agent))
    message = request.message
    message.message_id = str(uuid.uuid4())
    message.role = a2a_pb2.ROLE_USER
    if context_id is not None:
        message.context_id = check_id("context_id", context_id)
    if task_id is not None:
        message.task_id = check_id("task_id", task_id)
    if check_str("text", text):
        message.parts.add().text = text
    if data is not None:
        message.parts.add().data.CopyFrom(_struct_value("data", data))
    if not message.parts:
        raise ValueError("a message needs text or data")
    if metadata is not None:
        message.metadata.CopyFrom(_struct("metadata", metadata))
    # The gateway stores the message and answers at once; waiting is done by subscribing.
    request.configuration.return_immediately = True
    return request


def _struct(name: str, value: Any) -> struct_pb2.Struct:
    if not isinstance(value, Mapping):
        raise TypeError(f"{name} must be a dict, not {type(value).__name__}")
    struct = struct_pb2.Struct()
    try:
        json_format.ParseDict(dict(value), struct)
    except (json_format.ParseError, TypeError, ValueError) as error:
        raise ValueError(f"{name} must be JSON-like: {error}") from None
    return struct


def _struct_value(name: str, value: Any) -> struct_pb2.Value:
    result = struct_pb2.Value()
    result.struct_value.CopyFrom(_struct(name, value))
    return result


def register_agent(name: str, endpoint: str, card_url: str,
                   description: str) -> agent_registry_pb2.RegisterAgentRequest:
    agent = agent_registry_pb2.Agent(name=check_id("name", name),
                                     endpoint=check_str("endpoint", endpoint),
                                     card_url=check_str("card_url", card_url))
    if check_str("description", description):
        agent.card.name = name
        agent.card.description = description
    if not endpoint and not card_url:
        raise ValueError("register an agent with an endpoint (host:port) or a card_url")
    return agent_registry_pb2.RegisterAgentRequest(agent=agent)


def breaker_force(task: Any, reason: str) -> breaker_pb2.ForceEscalateRequest:
    return breaker_pb2.ForceEscalateRequest(task_id=task_id_arg(task),
                                            reason=check_str("reason", reason))


def a2a_tasks(context_id: Optional[str], page_size: Optional[int]) -> a2a_pb2.ListTasksRequest:
    request = a2a_pb2.ListTasksRequest()
    if context_id is not None:
        request.context_id = check_id("context_id", context_id)
    if page_size is not None:
        request.page_size = check_int("page_size", page_size, 1, 100)
    return request


A2A_METADATA: Tuple[Tuple[str, str], ...] = (("a2a-version", "1.0"),)
