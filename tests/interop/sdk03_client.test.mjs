// The official A2A JavaScript SDK 0.3 (@a2a-js/sdk 0.3.14, installed as a2a-sdk-v03) and its
// JSON-RPC client against the coordinator's 0.3 JSON-RPC binding, reaching the C++ echo_agent
// behind it: the same requests and answers a 0.3 agent template or benchmark harness sends and
// reads (message/send, message/stream, tasks/get, tasks/cancel, tasks/resubscribe, push
// configs), with the SDK's own parsing and error mapping. The client is given the agent's base
// URL; the task it makes is the one a 1.0 client sees.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ClientFactory, JsonRpcTransport } from 'a2a-sdk-v03/client';
import { COORD_HTTP, bindingClient, agentCardUrl, getTaskRequest, TaskState, assertState } from './lib.mjs';

const AGENT = 'echo';
const ENDPOINT = `${COORD_HTTP}/agents/${AGENT}`;

function client() {
  return new JsonRpcTransport({ endpoint: ENDPOINT });
}

let counter = 0;
function userMessage(text, fields = {}) {
  counter += 1;
  return {
    kind: 'message',
    messageId: `sdk03-${process.pid}-${counter}`,
    role: 'user',
    parts: [{ kind: 'text', text }],
    ...fields,
  };
}

const textOf = (message) => (message?.parts ?? []).filter((p) => p.kind === 'text').map((p) => p.text).join('');

test('0.3 message/send: a task in 0.3 JSON, and tasks/get reads it back with its history', async () => {
  const c = client();
  const task = await c.sendMessage({ message: userMessage('hello from 0.3') });
  assert.equal(task.kind, 'task', JSON.stringify(task));
  assert.equal(task.status.state, 'completed');
  assert.equal(textOf(task.status.message), 'echo: hello from 0.3');
  assert.equal(task.status.message.role, 'agent');
  assert.equal(task.artifacts[0].parts[0].kind, 'text');

  const read = await c.getTask({ id: task.id, historyLength: 10 });
  assert.equal(read.id, task.id);
  assert.equal(read.history[0].role, 'user');
  assert.equal(textOf(read.history[0]), 'hello from 0.3');

  // The same task through a 1.0 client.
  const v10 = await bindingClient(agentCardUrl(AGENT), 'JSONRPC');
  const same = await v10.getTask(getTaskRequest({ id: task.id }));
  assertState(same, TaskState.TASK_STATE_COMPLETED);
});

test('0.3 message/stream: the task, the artifact, a final status update', async () => {
  const events = [];
  for await (const event of client().sendMessageStream({ message: userMessage('streamed') })) {
    events.push(event);
  }
  assert.equal(events[0].kind, 'task', JSON.stringify(events));
  assert.ok(events.some((e) => e.kind === 'artifact-update'), JSON.stringify(events));
  const last = events.at(-1);
  assert.equal(last.kind, 'status-update');
  assert.equal(last.final, true);
  assert.equal(last.status.state, 'completed');
  assert.equal(events.filter((e) => e.final).length, 1);
});

test('0.3 errors come back as the SDK maps them: an unknown task, a task that cannot be canceled', async () => {
  const c = client();
  await assert.rejects(c.getTask({ id: 'no-such-task' }), (e) => /-32001|not found/i.test(String(e.message ?? e)));
  const done = await c.sendMessage({ message: userMessage('done already') });
  await assert.rejects(c.cancelTask({ id: done.id }), (e) => /-32002|cancel/i.test(String(e.message ?? e)));
  await assert.rejects(
    (async () => {
      for await (const _ of c.resubscribeTask({ id: 'no-such-task' })) {
        // nothing arrives
      }
    })(),
    (e) => /-32001|not found/i.test(String(e.message ?? e)),
  );
});

test('0.3 push notification configs: set, get, list, delete', async () => {
  const c = client();
  const task = await c.sendMessage({ message: userMessage('push') });
  const set = await c.setTaskPushNotificationConfig({
    taskId: task.id,
    pushNotificationConfig: { id: 'hook-1', url: 'http://127.0.0.1:9/hook', token: 'tok' },
  });
  assert.equal(set.taskId, task.id);
  assert.equal(set.pushNotificationConfig.id, 'hook-1');
  const got = await c.getTaskPushNotificationConfig({ id: task.id, pushNotificationConfigId: 'hook-1' });
  assert.equal(got.pushNotificationConfig.url, 'http://127.0.0.1:9/hook');
  const listed = await c.listTaskPushNotificationConfig({ id: task.id });
  assert.equal(listed.length, 1);
  await c.deleteTaskPushNotificationConfig({ id: task.id, pushNotificationConfigId: 'hook-1' });
  assert.equal((await c.listTaskPushNotificationConfig({ id: task.id })).length, 0);
});

test('0.3 client made from the agent card URL alone: the card reads as 0.3 and leads to JSON-RPC', async () => {
  const factory = new ClientFactory();
  const c = await factory.createFromUrl(agentCardUrl(AGENT), '');
  const result = await c.sendMessage({ message: userMessage('from the card') });
  assert.equal(result.kind, 'task', JSON.stringify(result));
  assert.equal(textOf(result.status.message), 'echo: from the card');
  const card = await (await fetch(agentCardUrl(AGENT))).json();
  assert.equal(card.protocolVersion, '0.3.0');
  assert.equal(card.preferredTransport, 'JSONRPC');
  assert.equal(card.url.replace(/\/$/, ''), ENDPOINT);
  assert.ok(Array.isArray(card.supportedInterfaces), '1.0 readers still find their interfaces');
});

test("0.3 client made from the coordinator's own card reaches the root: tasks of every agent, no tenant", async () => {
  const rootCard = `${COORD_HTTP}/.well-known/agent-card.json`;
  const card = await (await fetch(rootCard)).json();
  assert.equal(card.url.replace(/\/$/, ''), COORD_HTTP, "the root's card names the root");
  const rootClient = await new ClientFactory().createFromUrl(rootCard, '');
  const task = await client().sendMessage({ message: userMessage('found from the root') });
  assert.equal(task.kind, 'task', JSON.stringify(task));
  const again = await rootClient.getTask({ id: task.id });
  assert.equal(again.id, task.id);
  assert.equal(textOf(again.status.message), 'echo: found from the root');
});
