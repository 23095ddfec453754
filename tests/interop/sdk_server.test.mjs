// The official A2A JavaScript SDK's gRPC server (js_agent.mjs: grpcService over a
// DefaultRequestHandler with an InMemoryTaskStore), registered behind the coordinator as tenant
// "jsecho". The coordinator's C++ gateway is the gRPC client of that server: it delivers each
// message with SendStreamingMessage (A2A-Version 1.0, which the SDK server checks against its
// card), follows up with the agent's own task id, forwards CancelTask, and stores what the SDK
// server streams back. The SDK client reads it all from the coordinator.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  TaskState,
  asTask,
  assertState,
  bounded,
  cancelTaskRequest,
  clientFor,
  collect,
  eventCases,
  eventState,
  getTaskRequest,
  listTasksRequest,
  sendRequest,
  subscribeRequest,
  textOf,
} from './lib.mjs';

const TENANT = 'jsecho';

test('blocking send through the coordinator to the SDK server', async () => {
  const client = await clientFor(TENANT);
  const task = asTask(await client.sendMessage(sendRequest('hello js'), bounded()));
  assertState(task, TaskState.TASK_STATE_COMPLETED);
  assert.equal(textOf(task.status.message), 'js echo: hello js');
  assert.equal(task.artifacts.length, 1);
  assert.equal(task.artifacts[0].artifactId, 'echo');
  assert.equal(textOf(task.artifacts[0]), 'hello js');
  // The SDK server accepted (it checks A2A-Version against its card) and saw the coordinator's
  // header; the artifact metadata (a google.protobuf.Struct) came back through the store.
  assert.deepEqual(task.artifacts[0].metadata, { requestedVersion: '1.0' });

  const got = await client.getTask(getTaskRequest({ id: task.id, historyLength: 10 }), bounded());
  assertState(got, TaskState.TASK_STATE_COMPLETED);
  assert.equal(textOf(got.history[0]), 'hello js');
  const listed = await client.listTasks(listTasksRequest({ contextId: task.contextId }), bounded());
  assert.deepEqual(
    listed.tasks.map((t) => t.id),
    [task.id],
  );
});

test('streaming send: the SDK server events come back through the coordinator', async () => {
  const client = await clientFor(TENANT);
  const events = await collect(client.sendMessageStream(sendRequest('stream js'), bounded()));
  const cases = eventCases(events);
  assert.equal(cases[0], 'task', `events: ${cases}`);
  assert.ok(cases.includes('artifactUpdate'), `events: ${cases}`);
  assert.ok(
    events.some((e) => eventState(e) === TaskState.TASK_STATE_WORKING),
    `events: ${cases}`,
  );
  const last = events[events.length - 1];
  assert.equal(eventState(last), TaskState.TASK_STATE_COMPLETED);
  assert.equal(textOf(last.payload.value.status.message), 'js echo: stream js');
});

test('multi-turn: the follow-up reaches the SDK server task that asked for input', async () => {
  const client = await clientFor(TENANT);
  const first = asTask(await client.sendMessage(sendRequest('ask'), bounded()));
  assertState(first, TaskState.TASK_STATE_INPUT_REQUIRED);
  assert.equal(textOf(first.status.message), 'what should I echo?');
  const second = asTask(
    await client.sendMessage(
      sendRequest('js second turn', { message: { taskId: first.id, contextId: first.contextId } }),
      bounded(),
    ),
  );
  assert.equal(second.id, first.id);
  assertState(second, TaskState.TASK_STATE_COMPLETED);
  assert.equal(textOf(second.status.message), 'js echo: js second turn');
});

test('cancel is forwarded to the SDK server, which ends the task CANCELED', async () => {
  const client = await clientFor(TENANT);
  const submitted = asTask(
    await client.sendMessage(
      sendRequest('hold', { configuration: { returnImmediately: true } }),
      bounded(),
    ),
  );
  let canceled;
  const events = await collect(
    client.resubscribeTask(subscribeRequest({ id: submitted.id }), bounded()),
    async (event) => {
      if (canceled === undefined && eventState(event) === TaskState.TASK_STATE_WORKING) {
        canceled = await client.cancelTask(cancelTaskRequest({ id: submitted.id }), bounded());
      }
    },
  );
  assert.ok(canceled, `never saw WORKING: ${eventCases(events)}`);
  assertState(canceled, TaskState.TASK_STATE_CANCELED, 'CancelTask answer');
  // The status message is the SDK server's own: the cancel reached it.
  assert.equal(textOf(canceled.status.message), 'canceled by request');
  assert.equal(eventState(events[events.length - 1]), TaskState.TASK_STATE_CANCELED);
});

// The client gets the Message (A2A 3.1.1), and the coordinator keeps the task it made for the
// message, completed with the Message as its status message.
test('a bare Message answer from the SDK server is the answer, and the stored task keeps it', async () => {
  const client = await clientFor(TENANT);
  const answer = await client.sendMessage(sendRequest('message'), bounded());
  assert.ok(
    answer && 'messageId' in answer && !('status' in answer),
    `expected a Message, got ${JSON.stringify(answer)}`,
  );
  assert.equal(textOf(answer), 'a bare message from the js agent');
  // The SDK server's Message names its task: it comes back as the coordinator's task id.
  assert.ok(answer.taskId, `the Message names no task: ${JSON.stringify(answer)}`);
  const task = await client.getTask(getTaskRequest({ id: answer.taskId }), bounded());
  assertState(task, TaskState.TASK_STATE_COMPLETED);
  assert.equal(task.contextId, answer.contextId);
  assert.equal(textOf(task.status.message), 'a bare message from the js agent');

  // Streamed: the stored task first, then the Message, and the stream ends.
  const events = await collect(client.sendMessageStream(sendRequest('message'), bounded()));
  assert.deepEqual(eventCases(events), ['task', 'message']);
  assert.equal(textOf(events[1].payload.value), 'a bare message from the js agent');
});
