// The official A2A JavaScript SDK 0.3 (@a2a-js/sdk 0.3.14, installed as a2a-sdk-v03) and its
// JSON-RPC client against the coordinator's 0.3 JSON-RPC binding, reaching the C++ echo_agent
// behind it: the same requests and answers a 0.3 agent template or benchmark harness sends and
// reads (message/send, message/stream, tasks/get, tasks/cancel, tasks/resubscribe, push
// configs), with the SDK's own parsing and error mapping. The client is given the agent's base
// URL; the task it makes is the one a 1.0 client sees.
// The same client also reaches "jsrpc" (js_rpc_agent.mjs, an agent on the SDK 1.3's Express
// JSON-RPC server that run.sh registered by its 1.0 card): the coordinator takes the client's 0.3
// and speaks 1.0 to the agent, for send, stream, get, multi-turn, resubscribe and cancel.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ClientFactory } from 'a2a-sdk-v03/client';
import {
  COORD_HTTP,
  bindingClient,
  agentCardUrl,
  bounded,
  collect,
  getTaskRequest,
  registeredAgents,
  TaskState,
  assertState,
  v03Client,
  v03Message as userMessage,
  v03State,
  v03Text as textOf,
  waitUntil,
} from './lib.mjs';

const AGENT = 'echo';
const ENDPOINT = `${COORD_HTTP}/agents/${AGENT}`;

function client() {
  return v03Client(AGENT);
}

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

// --- The same 0.3 client to jsrpc, a 1.3 SDK agent (Express JSON-RPC) the coordinator calls in 1.0.

const JSRPC = 'jsrpc';

let seq = 0;
// A text no other test sends.
function unique(words) {
  seq += 1;
  return `${words} #${process.pid}-${seq}`;
}

test('jsrpc is registered at 1.0: the 0.3 client below is translated by the coordinator', async () => {
  const agent = (await registeredAgents()).find((a) => a.name === JSRPC);
  assert.ok(agent, `${JSRPC} is not registered`);
  assert.equal(agent.protocolBinding, 'JSONRPC');
  assert.equal(agent.protocolVersion, '1.0');
});

test('0.3 client to jsrpc: message/send, then tasks/get with history', async () => {
  const c = v03Client(JSRPC);
  const text = unique('hello jsrpc from 0.3');
  const task = await c.sendMessage({ message: userMessage(text) }, bounded());
  assert.equal(task.kind, 'task', JSON.stringify(task));
  assert.equal(task.status.state, 'completed');
  assert.equal(textOf(task.status.message), `js rpc echo: ${text}`);
  assert.equal(task.status.message.role, 'agent');
  assert.equal(task.artifacts[0].artifactId, 'echo');
  assert.equal(task.artifacts[0].parts[0].kind, 'text');
  assert.equal(textOf(task.artifacts[0]), text);

  const read = await c.getTask({ id: task.id, historyLength: 10 }, bounded());
  assert.equal(read.id, task.id);
  assert.equal(read.status.state, 'completed');
  assert.equal(read.history[0].role, 'user');
  assert.equal(textOf(read.history[0]), text);
  assert.deepEqual(read.artifacts.map(textOf), [text]);
});

test('0.3 client to jsrpc: message/stream; the task, the artifact, one final completed update', async () => {
  const text = unique('streamed to jsrpc');
  const events = await collect(v03Client(JSRPC).sendMessageStream({ message: userMessage(text) }, bounded()));
  assert.equal(events[0].kind, 'task', JSON.stringify(events));
  const artifacts = events.filter((e) => e.kind === 'artifact-update');
  assert.deepEqual(artifacts.map((e) => textOf(e.artifact)), [text], JSON.stringify(events));
  assert.ok(events.some((e) => v03State(e) === 'working'), JSON.stringify(events));
  const last = events.at(-1);
  assert.equal(last.kind, 'status-update');
  assert.equal(last.final, true);
  assert.equal(last.status.state, 'completed');
  assert.equal(textOf(last.status.message), `js rpc echo: ${text}`);
  assert.equal(events.filter((e) => e.final).length, 1, JSON.stringify(events));
});

test('0.3 client to jsrpc: multi-turn with the task id the coordinator gave', async () => {
  const c = v03Client(JSRPC);
  const first = await c.sendMessage({ message: userMessage('ask') }, bounded());
  assert.equal(first.status.state, 'input-required', JSON.stringify(first));
  assert.equal(textOf(first.status.message), 'what should I echo?');
  const reply = unique('second turn to jsrpc');
  const second = await c.sendMessage(
    { message: userMessage(reply, { taskId: first.id, contextId: first.contextId }) },
    bounded(),
  );
  assert.equal(second.id, first.id);
  assert.equal(second.status.state, 'completed', JSON.stringify(second));
  assert.equal(textOf(second.status.message), `js rpc echo: ${reply}`);
});

test('0.3 client to jsrpc: non-blocking send, tasks/resubscribe, tasks/cancel forwarded to the agent', async () => {
  const c = v03Client(JSRPC);
  const submitted = await c.sendMessage(
    { message: userMessage('hold'), configuration: { blocking: false } },
    bounded(),
  );
  assert.equal(submitted.kind, 'task', JSON.stringify(submitted));
  let canceled;
  const events = await collect(c.resubscribeTask({ id: submitted.id }, bounded()), async (event) => {
    if (canceled === undefined && v03State(event) === 'working') {
      canceled = await c.cancelTask({ id: submitted.id }, bounded());
    }
  });
  assert.ok(canceled, `never saw working: ${JSON.stringify(events)}`);
  assert.equal(canceled.id, submitted.id);
  assert.equal(events[0].kind, 'task', JSON.stringify(events));
  assert.equal(v03State(events.at(-1)), 'canceled', JSON.stringify(events));
  assert.equal(events.at(-1).final, true);
  const read = await waitUntil('the task to read canceled', async () => {
    const t = await c.getTask({ id: submitted.id }, bounded());
    return t.status.state === 'canceled' && t;
  });
  assert.equal(textOf(read.status.message), 'canceled by request', 'the agent canceled it');
  // Read through a 1.0 client too.
  const v10 = await bindingClient(agentCardUrl(JSRPC), 'JSONRPC');
  const read10 = await v10.getTask(getTaskRequest({ id: submitted.id }), bounded());
  assertState(read10, TaskState.TASK_STATE_CANCELED);
});

test('0.3 client to jsrpc: errors as the SDK maps them (resubscribe to or cancel an ended task, an unknown task)', async () => {
  const c = v03Client(JSRPC);
  const text = unique('done at jsrpc');
  const done = await c.sendMessage({ message: userMessage(text) }, bounded());
  assert.equal(done.status.state, 'completed', JSON.stringify(done));
  // docs/a2a.md: SubscribeToTask on an ended task answers UNSUPPORTED_OPERATION (0.3: -32004).
  await assert.rejects(collect(c.resubscribeTask({ id: done.id }, bounded())), (e) =>
    /-32004|not supported/i.test(String(e.message ?? e)),
  );
  await assert.rejects(c.cancelTask({ id: done.id }, bounded()), (e) =>
    /-32002|cancel/i.test(String(e.message ?? e)),
  );
  await assert.rejects(c.getTask({ id: `no-such-task-${process.pid}` }, bounded()), (e) =>
    /-32001|not found/i.test(String(e.message ?? e)),
  );
});
