// The SDK 1.3.0's opt-in A2A 0.3 compatibility layer (`legacyCompat: { enabled: true }`, code in
// @a2a-js/sdk/compat/v0_3) against the coordinator, in both directions.
//
// Client side: a 1.3 client with the layer on (card resolver and transport factory), made from
// the coordinator's per-agent card of the C++ echo agent. Left to choose it speaks 1.0: the card
// lists each binding at 1.0 and at 0.3, and the SDK takes 1.0. Made from the card narrowed to its
// 0.3 interfaces it speaks 0.3: JSON-RPC (LegacyJsonRpcTransport) and HTTP+JSON
// (LegacyRestTransport) send, get, stream, subscribe then cancel, and get the typed errors, every
// call with A2A-Version 0.3 and 0.3's methods or /v1 paths; a plain 1.0 client reads the same
// task. 0.3's gRPC has no tenant, so a per-agent card lists a 0.3 GRPC interface only for the
// agent a tenant-less call reaches: the gRPC case (LegacyGrpcTransport, a2a.v1.A2AService) runs
// against a coordinator of this file's own where echo is the only agent.
//
// Server side: js_rpc_agent.mjs with the layer on its Express handlers (--versions with 0.3),
// started here and registered by its card URL only. A card listing only 0.3 (JSON-RPC, and
// HTTP+JSON) is stored at protocol_version 0.3 and the coordinator's 0.3 requests are served by
// the layer; a card listing 1.0 and 0.3 is stored at 1.0 (the coordinator prefers 1.0 and reads
// the layer's 0.3 card by the 1.0 interfaces embedded in it). Each is reached through the
// coordinator by a 1.0 client (the SDK 1.3's JSON-RPC client) and a 0.3 client (the SDK 0.3's
// JsonRpcTransport): send, get, stream, multi-turn, resubscribe and cancel; the agent logs each
// execution with the A2A version the request came in, so each message is checked to have been
// executed once, in the version the registry holds.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { TaskNotCancelableError, TaskNotFoundError } from '@a2a-js/sdk/errors';
import {
  COORD_HTTP,
  INTEROP_WORK,
  agentCardUrl,
  assertState,
  asTask,
  bindingClient,
  bounded,
  calls,
  cancelTaskRequest,
  collect,
  compatClient,
  coordctl,
  eventCases,
  eventState,
  fetchCard,
  getTaskRequest,
  httpCalls,
  readJsonLines,
  registeredAgents,
  sendRequest,
  startCoordinator,
  startJsRpcAgent,
  stopProcess,
  subscribeRequest,
  TaskState,
  textOf,
  v03Client,
  v03Message,
  v03State,
  v03Text,
  waitUntil,
} from './lib.mjs';

const { TASK_STATE_COMPLETED: COMPLETED, TASK_STATE_WORKING: WORKING, TASK_STATE_CANCELED: CANCELED } =
  TaskState;
const ECHO = 'echo';

let seq = 0;
// A text no other test sends.
function unique(words) {
  seq += 1;
  return `${words} #${process.pid}-${seq}`;
}

// --- Client side: the 1.3 client with the layer on, to the C++ echo agent.

// Send, get, stream, subscribe then cancel, and two typed errors, through `client`. Resolves to
// the id of the completed task.
async function roundTrip(client) {
  const text = unique('compat');
  const task = asTask(await client.sendMessage(sendRequest(text), bounded()));
  assertState(task, COMPLETED);
  assert.equal(textOf(task.status.message), `echo: ${text}`);
  assert.equal(task.artifacts[0]?.artifactId, 'echo');
  assert.equal(textOf(task.artifacts[0]), text);
  const got = await client.getTask(getTaskRequest({ id: task.id, historyLength: 10 }), bounded());
  assert.equal(got.id, task.id);
  assertState(got, COMPLETED);
  assert.equal(textOf(got.history[0]), text);

  const streamed = unique('compat stream');
  const events = await collect(client.sendMessageStream(sendRequest(streamed), bounded()));
  const cases = eventCases(events);
  assert.equal(cases[0], 'task', `events: ${cases}`);
  assert.ok(cases.includes('artifactUpdate'), `events: ${cases}`);
  assert.equal(eventState(events.at(-1)), COMPLETED, `events: ${cases}`);
  assert.equal(textOf(events.at(-1).payload.value.status.message), `echo: ${streamed}`);

  const submitted = asTask(
    await client.sendMessage(sendRequest('hold', { configuration: { returnImmediately: true } }), bounded()),
  );
  let canceled;
  const held = await collect(
    client.resubscribeTask(subscribeRequest({ id: submitted.id }), bounded()),
    async (event) => {
      if (canceled === undefined && eventState(event) === WORKING) {
        canceled = await client.cancelTask(cancelTaskRequest({ id: submitted.id }), bounded());
      }
    },
  );
  assert.ok(canceled, `never saw WORKING: ${eventCases(held)}`);
  assertState(canceled, CANCELED, 'CancelTask answer');
  assert.equal(eventState(held.at(-1)), CANCELED);
  assertState(await client.getTask(getTaskRequest({ id: submitted.id }), bounded()), CANCELED);

  await assert.rejects(client.getTask(getTaskRequest({ id: 'no-such-task' }), bounded()), (err) => {
    assert.ok(err instanceof TaskNotFoundError, `${err?.constructor?.name}: ${err}`);
    return true;
  });
  await assert.rejects(client.cancelTask(cancelTaskRequest({ id: task.id }), bounded()), (err) => {
    assert.ok(err instanceof TaskNotCancelableError, `${err?.constructor?.name}: ${err}`);
    return true;
  });
  return task.id;
}

// What roundTrip calls, by 0.3 JSON-RPC method and by 0.3 gRPC method.
const RPC_METHODS = ['message/send', 'tasks/get', 'message/stream', 'tasks/resubscribe', 'tasks/cancel'];
const GRPC_METHODS = ['SendMessage', 'GetTask', 'SendStreamingMessage', 'TaskSubscription', 'CancelTask'];

test('the per-agent card lists each binding at 1.0 and 0.3; left to choose, the compat client speaks 1.0', async () => {
  const card = await fetchCard(agentCardUrl(ECHO));
  const at = (binding, version) =>
    card.supportedInterfaces.find((i) => i.protocolBinding === binding && i.protocolVersion === version);
  for (const binding of ['JSONRPC', 'HTTP+JSON']) {
    assert.ok(at(binding, '1.0') && at(binding, '0.3'), JSON.stringify(card.supportedInterfaces));
    assert.equal(at(binding, '0.3').url, at(binding, '1.0').url);
  }
  for (const binding of ['JSONRPC', 'HTTP+JSON', 'GRPC']) {
    const [http, grpc] = [httpCalls.length, calls.length];
    const client = await compatClient(agentCardUrl(ECHO), binding);
    assert.equal(client.protocolVersion, '1.0', binding);
    const text = unique(`left to choose on ${binding}`);
    const task = asTask(await client.sendMessage(sendRequest(text), bounded()));
    assert.equal(textOf(task.status.message), `echo: ${text}`);
    if (binding === 'GRPC') {
      const made = calls.slice(grpc);
      assert.ok(made.length > 0);
      for (const call of made) assert.match(call.path, /^\/lf\.a2a\.v1\.A2AService\//);
    } else {
      const sent = httpCalls.slice(http).filter((c) => c.method === 'POST');
      assert.ok(sent.length > 0);
      for (const call of sent) assert.equal(call.version, '1.0', JSON.stringify(call));
    }
  }
});

for (const binding of ['JSONRPC', 'HTTP+JSON']) {
  test(`compat client forced to 0.3 on ${binding}: send, get, stream, cancel, typed errors, all in 0.3`, async () => {
    const from = httpCalls.length;
    const client = await compatClient(agentCardUrl(ECHO), binding, '0.3');
    assert.equal(client.protocolVersion, '0.3');
    const id = await roundTrip(client);
    // Every call after the card's, as the SDK made it: A2A-Version 0.3, 0.3's methods or paths.
    const made = httpCalls.slice(from).filter((c) => !c.url.endsWith('/agent-card.json'));
    const base = `${COORD_HTTP}/agents/${ECHO}`;
    for (const call of made) assert.equal(call.version, '0.3', JSON.stringify(call));
    if (binding === 'JSONRPC') {
      for (const call of made) assert.equal(call.url.replace(/\/$/, ''), base);
      assert.deepEqual([...new Set(made.map((c) => c.rpc))].sort(), [...RPC_METHODS].sort());
    } else {
      for (const call of made) assert.ok(call.url.startsWith(`${base}/v1/`), call.url);
      const paths = made.map((c) => c.url.slice(base.length));
      assert.ok(paths.includes('/v1/message:send'), JSON.stringify(paths));
      assert.ok(paths.includes('/v1/message:stream'), JSON.stringify(paths));
    }
    // The task the 0.3 client made is the one a plain 1.0 client reads.
    const v10 = await bindingClient(agentCardUrl(ECHO), 'JSONRPC');
    assertState(await v10.getTask(getTaskRequest({ id }), bounded()), COMPLETED);
  });
}

test('compat client forced to 0.3 on gRPC (a2a.v1.A2AService, no tenant), where echo is the only agent', async () => {
  // With several agents registered no tenant-less call reaches echo, so run.sh's coordinator
  // lists no 0.3 GRPC interface for it.
  const shared = await fetchCard(agentCardUrl(ECHO));
  assert.ok(
    !shared.supportedInterfaces.some((i) => i.protocolBinding === 'GRPC' && i.protocolVersion === '0.3'),
    JSON.stringify(shared.supportedInterfaces),
  );
  const echo = (await registeredAgents()).find((a) => a.name === ECHO);
  assert.ok(echo, 'run.sh registered echo');
  const own = await startCoordinator('compat-coordinator', path.join(INTEROP_WORK, 'compat-coordinator'));
  try {
    const registered = await coordctl(['agent', 'register', ECHO, echo.endpoint], own.addr);
    assert.equal(registered.code, 0, `${registered.stdout}\n${registered.stderr}`);
    const from = calls.length;
    const client = await compatClient(agentCardUrl(ECHO, own.http), 'GRPC', '0.3');
    assert.equal(client.protocolVersion, '0.3');
    const id = await roundTrip(client);
    const made = calls.slice(from);
    for (const call of made) assert.match(call.path, /^\/a2a\.v1\.A2AService\/[A-Za-z]+$/);
    assert.deepEqual([...new Set(made.map((c) => c.path.split('/').pop()))].sort(), [...GRPC_METHODS].sort());
    const v10 = await bindingClient(agentCardUrl(ECHO, own.http), 'GRPC');
    assertState(await v10.getTask(getTaskRequest({ id }), bounded()), COMPLETED);
  } finally {
    await stopProcess(own.proc);
  }
});

// --- Server side: SDK 1.3 Express agents with the layer on, behind the coordinator.

const AGENTS = [
  { name: 'compat03', binding: 'JSONRPC', versions: ['0.3'], stored: '0.3' },
  { name: 'compat03rest', binding: 'HTTP+JSON', versions: ['0.3'], stored: '0.3' },
  { name: 'compatboth', binding: 'JSONRPC', versions: ['1.0', '0.3'], stored: '1.0' },
];
// name -> { proc, base, card, state }
const started = new Map();

before(async () => {
  for (const agent of AGENTS) {
    const state = path.join(INTEROP_WORK, agent.name);
    const proc = await startJsRpcAgent(agent.name, [
      `--name=${agent.name}`,
      `--binding=${agent.binding}`,
      `--versions=${agent.versions.join(',')}`,
      `--state_dir=${state}`,
    ]);
    started.set(agent.name, { ...proc, state });
    const registered = await coordctl(['agent', 'register', agent.name, '--card', proc.card]);
    assert.equal(registered.code, 0, `${registered.stdout}\n${registered.stderr}`);
  }
});

after(async () => {
  // Gone again, so that other files see the registry run.sh made.
  for (const agent of AGENTS) {
    if (!started.has(agent.name)) continue;
    await coordctl(['agent', 'rm', agent.name]);
    await stopProcess(started.get(agent.name).proc);
  }
});

// The one execution of message `messageId` at `agent`; fails if it ran never or more than once.
function executedOnce(agent, messageId) {
  const runs = readJsonLines(path.join(started.get(agent.name).state, 'executions.jsonl')).filter(
    (e) => e.messageId === messageId,
  );
  assert.equal(runs.length, 1, `executions of ${messageId} at ${agent.name}: ${JSON.stringify(runs)}`);
  return runs[0];
}

for (const agent of AGENTS) {
  const what = `${agent.name} (${agent.binding} ${agent.versions.join(' and ')}, layer on)`;

  test(`${what}: its cards, and the registry stored ${agent.binding} ${agent.stored}`, async () => {
    const { card } = started.get(agent.name);
    // Asked without A2A-Version (as 0.3 clients and the coordinator ask): the layer's 0.3 card,
    // the card's interfaces embedded as supportedInterfaces.
    const legacy = await (await fetch(card)).json();
    assert.equal(legacy.protocolVersion, '0.3');
    assert.equal(legacy.preferredTransport, agent.binding);
    assert.ok(legacy.url.startsWith(started.get(agent.name).base), legacy.url);
    assert.deepEqual(
      legacy.supportedInterfaces.map((i) => i.protocolVersion),
      agent.versions,
    );
    const v10 = await (await fetch(card, { headers: { 'A2A-Version': '1.0' } })).json();
    assert.equal(v10.url, undefined, 'the 1.0 card has no 0.3 url');
    assert.deepEqual(
      v10.supportedInterfaces.map((i) => `${i.protocolBinding} ${i.protocolVersion}`),
      agent.versions.map((v) => `${agent.binding} ${v}`),
    );

    const stored = (await registeredAgents()).find((a) => a.name === agent.name);
    assert.ok(stored, `${agent.name} is not registered`);
    assert.equal(stored.protocolBinding, agent.binding, JSON.stringify(stored));
    assert.equal(stored.protocolVersion, agent.stored, JSON.stringify(stored));
    assert.equal(stored.cardUrl, card);
  });

  test(`${what}: a 1.0 client through the coordinator: send, get, stream; each executed once in ${agent.stored}`, async () => {
    const client = await bindingClient(agentCardUrl(agent.name), 'JSONRPC');
    const text = unique('from 1.0');
    const request = sendRequest(text);
    const task = asTask(await client.sendMessage(request, bounded()));
    assertState(task, COMPLETED);
    assert.equal(textOf(task.status.message), `js rpc echo: ${text}`);
    assert.equal(task.artifacts[0]?.artifactId, 'echo');
    assert.equal(textOf(task.artifacts[0]), text);
    const run = executedOnce(agent, request.message.messageId);
    assert.equal(run.text, text);
    assert.equal(run.version, agent.stored, 'the version the agent was called in');
    assert.notEqual(run.taskId, task.id, "the coordinator's task id is the agent's");
    const got = await client.getTask(getTaskRequest({ id: task.id, historyLength: 10 }), bounded());
    assertState(got, COMPLETED);
    assert.equal(textOf(got.history[0]), text);

    const streamed = sendRequest(unique('streamed from 1.0'));
    const events = await collect(client.sendMessageStream(streamed, bounded()));
    const cases = eventCases(events);
    assert.equal(cases[0], 'task', `events: ${cases}`);
    assert.ok(cases.includes('artifactUpdate'), `events: ${cases}`);
    assert.equal(eventState(events.at(-1)), COMPLETED, `events: ${cases}`);
    assert.equal(executedOnce(agent, streamed.message.messageId).version, agent.stored);
  });

  test(`${what}: a 0.3 client through the coordinator: message/send, tasks/get, message/stream; each executed once`, async () => {
    const client = v03Client(agent.name);
    const text = unique('from 0.3');
    const message = v03Message(text);
    const task = await client.sendMessage({ message }, bounded());
    assert.equal(task.kind, 'task', JSON.stringify(task));
    assert.equal(task.status.state, 'completed');
    assert.equal(v03Text(task.status.message), `js rpc echo: ${text}`);
    assert.equal(task.artifacts[0].artifactId, 'echo');
    assert.equal(v03Text(task.artifacts[0]), text);
    const run = executedOnce(agent, message.messageId);
    assert.equal(run.version, agent.stored, 'the version the agent was called in');
    assert.notEqual(run.taskId, task.id, "the coordinator's task id is the agent's");
    const got = await client.getTask({ id: task.id, historyLength: 10 }, bounded());
    assert.equal(got.id, task.id);
    assert.equal(v03Text(got.history[0]), text);

    const streamed = v03Message(unique('streamed from 0.3'));
    const events = await collect(client.sendMessageStream({ message: streamed }, bounded()));
    assert.equal(events[0].kind, 'task', JSON.stringify(events));
    assert.ok(events.some((e) => e.kind === 'artifact-update'), JSON.stringify(events));
    assert.equal(v03State(events.at(-1)), 'completed', JSON.stringify(events));
    assert.equal(events.filter((e) => e.final).length, 1, JSON.stringify(events));
    assert.equal(executedOnce(agent, streamed.messageId).version, agent.stored);
  });

  test(`${what}: a 0.3 client: multi-turn, then a non-blocking send resubscribed and canceled`, async () => {
    const client = v03Client(agent.name);
    const ask = v03Message('ask');
    const first = await client.sendMessage({ message: ask }, bounded());
    assert.equal(first.status.state, 'input-required', JSON.stringify(first));
    const reply = v03Message(unique('second turn'), { taskId: first.id, contextId: first.contextId });
    const second = await client.sendMessage({ message: reply }, bounded());
    assert.equal(second.id, first.id);
    assert.equal(second.status.state, 'completed', JSON.stringify(second));
    assert.equal(v03Text(second.status.message), `js rpc echo: ${v03Text(reply)}`);
    assert.equal(
      executedOnce(agent, reply.messageId).taskId,
      executedOnce(agent, ask.messageId).taskId,
      "the follow-up went to another of the agent's tasks",
    );

    const hold = v03Message('hold');
    const submitted = await client.sendMessage(
      { message: hold, configuration: { blocking: false } },
      bounded(),
    );
    assert.equal(submitted.kind, 'task', JSON.stringify(submitted));
    let canceled;
    const events = await collect(client.resubscribeTask({ id: submitted.id }, bounded()), async (event) => {
      if (canceled === undefined && v03State(event) === 'working') {
        canceled = await client.cancelTask({ id: submitted.id }, bounded());
      }
    });
    assert.ok(canceled, `never saw working: ${JSON.stringify(events)}`);
    assert.equal(v03State(events.at(-1)), 'canceled', JSON.stringify(events));
    const read = await waitUntil('the task to read canceled', async () => {
      const t = await client.getTask({ id: submitted.id }, bounded());
      return t.status.state === 'canceled' && t;
    });
    assert.equal(v03Text(read.status.message), 'canceled by request', 'the agent canceled it');
    assert.equal(executedOnce(agent, hold.messageId).version, agent.stored);
  });
}
