// The official A2A JavaScript SDK's JSON-RPC and HTTP+JSON (REST) clients against the
// coordinator's own JSON-RPC and REST bindings, reaching the C++ echo_agent behind it. Each
// client is made from the per-agent card URL alone
// (http://<COORD_HTTP>/agents/echo/.well-known/agent-card.json); the test sets no tenant. Send,
// stream, get, list, multi-turn, subscribe then cancel, and the A2A errors as the SDK decodes
// them from each binding; one task seen the same through all three bindings.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { TaskNotCancelableError, TaskNotFoundError } from '@a2a-js/sdk/errors';
import {
  COORD_ADDR,
  COORD_HTTP,
  TaskState,
  agentCardUrl,
  asTask,
  assertState,
  bindingClient,
  bounded,
  cancelTaskRequest,
  clientFor,
  collect,
  eventCases,
  eventState,
  fetchCard,
  getTaskRequest,
  httpCalls,
  listTasksRequest,
  sendRequest,
  subscribeRequest,
  textOf,
} from './lib.mjs';

const AGENT = 'echo';
const CARD = agentCardUrl(AGENT);
const BINDINGS = ['JSONRPC', 'HTTP+JSON'];

test('the per-agent card lists the JSON-RPC, HTTP+JSON and gRPC interfaces of the agent', async () => {
  const card = await fetchCard(CARD);
  // The 1.0 interfaces; the 0.3 ones follow them (checked in sdk03_client.test.mjs).
  const byBinding = (b) =>
    (card.supportedInterfaces ?? []).filter(
      (i) => i.protocolBinding === b && i.protocolVersion === '1.0',
    );
  for (const binding of BINDINGS) {
    const [iface, ...more] = byBinding(binding);
    assert.ok(iface, `no ${binding} interface in ${JSON.stringify(card.supportedInterfaces)}`);
    assert.equal(more.length, 0);
    assert.equal(iface.url.replace(/\/$/, ''), `${COORD_HTTP}/agents/${AGENT}`);
    assert.equal(iface.protocolVersion, '1.0');
  }
  const grpc = byBinding('GRPC');
  assert.equal(grpc.length, 1, JSON.stringify(card.supportedInterfaces));
  assert.equal(grpc[0].url, COORD_ADDR);
  assert.equal(grpc[0].tenant, AGENT);
  assert.equal(card.capabilities?.streaming, true);
});

for (const binding of BINDINGS) {
  test(`${binding}: blocking send, then get (with history) and list by context`, async () => {
    const client = await bindingClient(CARD, binding);
    const task = asTask(await client.sendMessage(sendRequest(`hello ${binding}`), bounded()));
    assertState(task, TaskState.TASK_STATE_COMPLETED);
    assert.equal(textOf(task.status.message), `echo: hello ${binding}`);
    assert.equal(task.artifacts.length, 1);
    assert.equal(textOf(task.artifacts[0]), `hello ${binding}`);

    const got = await client.getTask(getTaskRequest({ id: task.id, historyLength: 10 }), bounded());
    assert.equal(got.id, task.id);
    assertState(got, TaskState.TASK_STATE_COMPLETED);
    assert.equal(textOf(got.history[0]), `hello ${binding}`);

    const listed = await client.listTasks(
      listTasksRequest({ contextId: task.contextId, includeArtifacts: true }),
      bounded(),
    );
    assert.deepEqual(
      listed.tasks.map((t) => t.id),
      [task.id],
    );
    assert.equal(textOf(listed.tasks[0].artifacts[0]), `hello ${binding}`);
    const byState = await client.listTasks(
      listTasksRequest({ status: 'TASK_STATE_COMPLETED', pageSize: 100 }),
      bounded(),
    );
    assert.ok(byState.tasks.some((t) => t.id === task.id));
    assert.ok(byState.tasks.every((t) => t.status.state === TaskState.TASK_STATE_COMPLETED));
  });

  test(`${binding}: streaming send yields the task, its updates and the artifact`, async () => {
    const client = await bindingClient(CARD, binding);
    const events = await collect(client.sendMessageStream(sendRequest('stream me'), bounded()));
    const cases = eventCases(events);
    assert.equal(cases[0], 'task', `events: ${cases}`);
    assert.ok(cases.includes('artifactUpdate'), `events: ${cases}`);
    assert.equal(eventState(events[events.length - 1]), TaskState.TASK_STATE_COMPLETED);
    const taskId = events[0].payload.value.id;
    for (const e of events.slice(1)) assert.equal(e.payload.value.taskId, taskId);
  });

  test(`${binding}: multi-turn, INPUT_REQUIRED then a follow-up completes the task`, async () => {
    const client = await bindingClient(CARD, binding);
    const first = asTask(await client.sendMessage(sendRequest('ask'), bounded()));
    assertState(first, TaskState.TASK_STATE_INPUT_REQUIRED);
    const second = asTask(
      await client.sendMessage(
        sendRequest('second turn', { message: { taskId: first.id, contextId: first.contextId } }),
        bounded(),
      ),
    );
    assert.equal(second.id, first.id);
    assertState(second, TaskState.TASK_STATE_COMPLETED);
    assert.equal(textOf(second.status.message), 'echo: second turn');
  });

  test(`${binding}: subscribe to a running task, cancel it, and see CANCELED`, async () => {
    const client = await bindingClient(CARD, binding);
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
    assert.equal(events[0].payload.$case, 'task');
    assert.equal(eventState(events[events.length - 1]), TaskState.TASK_STATE_CANCELED);
    const got = await client.getTask(getTaskRequest({ id: submitted.id }), bounded());
    assertState(got, TaskState.TASK_STATE_CANCELED);
  });

  test(`${binding}: A2A errors arrive as the SDK's typed errors`, async () => {
    const client = await bindingClient(CARD, binding);
    await assert.rejects(client.getTask(getTaskRequest({ id: 'no-such-task' }), bounded()), (err) => {
      assert.ok(err instanceof TaskNotFoundError, `${err?.constructor?.name}: ${err}`);
      return true;
    });
    const done = asTask(await client.sendMessage(sendRequest('finish me'), bounded()));
    await assert.rejects(client.cancelTask(cancelTaskRequest({ id: done.id }), bounded()), (err) => {
      assert.ok(err instanceof TaskNotCancelableError, `${err?.constructor?.name}: ${err}`);
      return true;
    });
  });
}

test('one task, the same through JSON-RPC, HTTP+JSON and gRPC', async () => {
  const rpc = await bindingClient(CARD, 'JSONRPC');
  const rest = await bindingClient(CARD, 'HTTP+JSON');
  const grpc = await clientFor(AGENT);
  const task = asTask(await rpc.sendMessage(sendRequest('one task, three bindings'), bounded()));
  for (const client of [rest, grpc]) {
    const got = await client.getTask(getTaskRequest({ id: task.id, historyLength: 10 }), bounded());
    assert.equal(got.id, task.id);
    assert.equal(got.contextId, task.contextId);
    assertState(got, TaskState.TASK_STATE_COMPLETED);
    assert.equal(textOf(got.artifacts[0]), 'one task, three bindings');
    assert.equal(textOf(got.history[0]), 'one task, three bindings');
  }
});

test('every HTTP call went to the agent URL of the card, with A2A-Version 1.0', () => {
  assert.ok(httpCalls.length > 0);
  for (const call of httpCalls) {
    assert.ok(call.url.startsWith(`${COORD_HTTP}/agents/${AGENT}`), call.url);
    assert.equal(call.version, '1.0', `${call.method} ${call.url}`);
  }
});
