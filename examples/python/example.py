#!/usr/bin/python3
"""An agent's use of the coordinator from Python, step by step.

It keeps an evaluation's state where a restart cannot lose it: it creates a
context, records the commands it runs, appends to its conversation, and
drives the retry state and the loop breaker of its task (init, attempt,
failure, escalation, loop check, break, breaker status). Every step prints
one line.

The stubs come from our protos (protoc + grpc_python_plugin; the build writes
them to <build dir>/python):

    PYTHONPATH=build/python /usr/bin/python3 examples/python/example.py \\
        --target 127.0.0.1:50051
"""

import argparse
import sys
import uuid

import grpc
from google.protobuf import duration_pb2

from coordinator.v1 import breaker_pb2
from coordinator.v1 import breaker_pb2_grpc
from coordinator.v1 import context_pb2
from coordinator.v1 import context_pb2_grpc
from coordinator.v1 import conversation_pb2
from coordinator.v1 import conversation_pb2_grpc
from coordinator.v1 import task_state_pb2
from coordinator.v1 import task_state_pb2_grpc

# Every call has a deadline, in seconds.
TIMEOUT = 10


def say(what):
    print(what, flush=True)


def record_command(contexts, context_id, command, exit_code, seconds):
    """Counts one command of the context and stores its record."""
    duration = duration_pb2.Duration()
    duration.FromMilliseconds(int(seconds * 1000))
    response = contexts.RecordCommand(
        context_pb2.RecordCommandRequest(
            context_id=context_id, command=command, exit_code=exit_code,
            duration=duration),
        timeout=TIMEOUT)
    say(f"recorded command #{response.record.seq}: {command!r} "
        f"exit {exit_code} (command_count "
        f"{response.context.command_count}, failed "
        f"{response.context.failed_commands})")


def append(conversations, context_id, role, text, tokens):
    """Appends one message to the context's conversation."""
    response = conversations.AppendMessage(
        conversation_pb2.AppendMessageRequest(
            context_id=context_id, role=role, text=text, tokens=tokens),
        timeout=TIMEOUT)
    say(f"appended message #{response.message.seq} "
        f"(step_count {response.step_count}, "
        f"total_tokens {response.total_tokens})")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", default="127.0.0.1:50051",
                        help="coordinator address (default %(default)s)")
    parser.add_argument("--context-id", default="",
                        help="context to create (default: a new uuid)")
    args = parser.parse_args()
    context_id = args.context_id or f"py-{uuid.uuid4()}"

    with grpc.insecure_channel(args.target) as channel:
        contexts = context_pb2_grpc.ContextServiceStub(channel)
        conversations = conversation_pb2_grpc.ConversationServiceStub(
            channel)
        tasks = task_state_pb2_grpc.TaskStateServiceStub(channel)
        breaker = breaker_pb2_grpc.BreakerServiceStub(channel)

        # 1. The evaluation's context, as the judging agent keeps it.
        created = contexts.CreateContext(
            context_pb2.CreateContextRequest(context=context_pb2.TaskContext(
                context_id=context_id, agent="python-agent",
                external_task_id="uaf-list-remove",
                workspace_dir=f"/ws/{context_id}",
                labels={"suite": "rca", "language": "python"})),
            timeout=TIMEOUT)
        say(f"created context {created.context_id} "
            f"(status {context_pb2.ContextStatus.Name(created.status)}, "
            f"version {created.version})")

        # 2. Commands it ran in the workspace.
        record_command(contexts, context_id, "make -C src", 0, 1.5)
        record_command(contexts, context_id, "./run_tests.sh", 2, 0.25)

        # 3. Its conversation with the model.
        append(conversations, context_id, conversation_pb2.ROLE_USER,
               "Find the root cause of the crash", 120)
        append(conversations, context_id, conversation_pb2.ROLE_AGENT,
               "execute: grep -n free src/list.c", 35)
        convo = conversations.GetConversation(
            conversation_pb2.GetConversationRequest(
                context_id=context_id, tail=1),
            timeout=TIMEOUT)
        say(f"last message: {convo.messages[0].text!r}")

        # 4. Retry state of the task: attempts, failures, tiers.
        task = tasks.InitTask(
            task_state_pb2.InitTaskRequest(
                description=f"python example {context_id}"),
            timeout=TIMEOUT)
        task_id = task.task_id
        say(f"task {task_id} initialised (created {task.created})")
        attempt = tasks.IncrementAttempt(
            task_state_pb2.IncrementAttemptRequest(task_id=task_id),
            timeout=TIMEOUT)
        say(f"attempt {attempt.attempt_count}")
        for _ in range(2):
            failure = tasks.RecordFailure(
                task_state_pb2.RecordFailureRequest(
                    task_id=task_id,
                    error="AddressSanitizer: heap-use-after-free"),
                timeout=TIMEOUT)
            say(f"recorded failure #{failure.failure.seq} on "
                f"{failure.failure.model}")
        context_text = tasks.GetFailureContext(
            task_state_pb2.GetFailureContextRequest(task_id=task_id),
            timeout=TIMEOUT)
        say(f"failure context lists {context_text.failure_count} failures")

        # 5. The loop breaker: the same error twice is a loop.
        check = breaker.CheckLoop(
            breaker_pb2.CheckLoopRequest(task_id=task_id), timeout=TIMEOUT)
        say(f"loop check: looping={check.looping} "
            f"pattern={check.pattern_type}")
        if check.looping:
            forced = breaker.ForceEscalate(
                breaker_pb2.ForceEscalateRequest(
                    task_id=task_id, reason="same error twice"),
                timeout=TIMEOUT)
            say(f"force-escalated: tier {forced.from_tier} -> "
                f"{forced.to_tier} ({forced.model})")
        tier = tasks.GetTier(
            task_state_pb2.GetTierRequest(task_id=task_id), timeout=TIMEOUT)
        say(f"now on tier {tier.model_tier} ({tier.model})")
        breaker.Break(
            breaker_pb2.BreakRequest(
                task_id=task_id, reason="stopping the example"),
            timeout=TIMEOUT)
        status = breaker.GetBreakerStatus(
            breaker_pb2.GetBreakerStatusRequest(), timeout=TIMEOUT)
        blocked = [b.task_id for b in status.blocked_tasks]
        say(f"breaker status: {len(blocked)} blocked, "
            f"{task_id} blocked: {task_id in blocked}")

        # 6. Errors are gRPC status codes chosen by what to do next.
        try:
            contexts.GetContext(
                context_pb2.GetContextRequest(context_id=f"{context_id}-x"),
                timeout=TIMEOUT)
        except grpc.RpcError as error:
            say(f"a missing context is {error.code().name}")

        final = contexts.GetContext(
            context_pb2.GetContextRequest(context_id=context_id),
            timeout=TIMEOUT)
        say(f"done: context {context_id} task {task_id} "
            f"command_count {final.command_count}")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except grpc.RpcError as error:
        print(f"example.py: {error.code().name}: {error.details()}",
              file=sys.stderr)
        sys.exit(1)
