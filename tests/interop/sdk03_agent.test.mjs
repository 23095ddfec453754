// An A2A 0.3 agent behind the coordinator: js03_agent.mjs, on the official JavaScript SDK 0.3's
// Express JSON-RPC server, which run.sh registered with `coordctl agent register js03 --card <its
// 0.3 card URL>` and nothing else. The coordinator read the 0.3 card, stored the agent with
// protocol_version 0.3 and delivers to it with 0.3's JSON-RPC methods and JSON. Clients reach it
// through the coordinator with the SDK 1.3.0 clients (gRPC, JSON-RPC, HTTP+JSON), with the SDK
// 0.3 JSON-RPC client on the coordinator's 0.3 binding, and with `coordctl send`. The agent logs
// every execution (JS03_STATE/executions.jsonl, with the task id it used), so each test checks
// that its message was executed once and that the agent's own task id stays behind the gateway.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { Message, StreamResponse, Task } from '@a2a-js/sdk';
import { JsonRpcTransport } from 'a2a-sdk-v03/client';
import {
  COORD_HTTP,
  agentCardUrl,
  assertState,
  asTask,
  bindingClient,
  bounded,
  cancelTaskRequest,
  clientFor,
  collect,
  coordctl,
  eventCases,
  eventState,
  getTaskRequest,
  readJsonLines,
  registeredAgents,
  sendRequest,
  subscribeRequest,
  TaskState,
  textOf,
  waitUntil,
} from './lib.mjs';

const NAME = 'js03';
const CARD = process.env.JS03_CARD;
const STATE = process.env.JS03_STATE;

const CLIENTS = [
  { binding: 'GRPC', make: () => clientFor(NAME) },
  { binding: 'JSONRPC', make: () => bindingClient(agentCardUrl(NAME), 'JSONRPC') },
  { binding: 'HTTP+JSON', make: () => bindingClient(agentCardUrl(NAME), 'HTTP+JSON') },
];

let seq = 0;
// A text no other test sends; the agent acts on its first word.
function unique(words) {
  seq += 1;
  return `${words} #${process.pid}-${seq}`;
}

// The agent's executions, as it logged them: {taskId, contextId, messageId, text}.
function executions() {
  assert.ok(STATE, 'run.sh sets JS03_STATE');
  return readJsonLines(path.join(STATE, 'executions.jsonl'));
}

// The one execution of `text`; fails if the agent ran it never or more than once.
function executedOnce(text) {
  const runs = executions().filter((e) => e.text === text);
  assert.equal(runs.length, 1, `executions of "${text}": ${JSON.stringify(runs)}`);
  return runs[0];
}

// The coordinator's task (and whatever else it answered) names its own task id, not the agent's.
function assertNoAgentId(agentTaskId, coordinatorTaskId, json, what) {
  assert.notEqual(coordinatorTaskId, agentTaskId, `${what}: the coordinator's id is the agent's`);
  assert.ok(
    !JSON.stringify(json).includes(agentTaskId),
    `${what} carries the agent's own task id ${agentTaskId}: ${JSON.stringify(json)}`,
  );
}

test('the registry took the 0.3 card: JSONRPC at protocol_version 0.3', async () => {
  assert.ok(CARD, 'run.sh sets JS03_CARD');
  const card = await (await fetch(CARD)).json();
  assert.equal(card.protocolVersion, '0.3.0');
  assert.equal(card.preferredTransport, 'JSONRPC');
  assert.equal(card.supportedInterfaces, undefined, 'a pure 0.3 card');

  const agents = await registeredAgents();
  const agent = agents.find((a) => a.name === NAME);
  assert.ok(agent, `${NAME} is not registered: ${JSON.stringify(agents)}`);
  assert.equal(agent.protocolVersion, '0.3', JSON.stringify(agent));
  assert.equal(agent.protocolBinding, 'JSONRPC');
  assert.equal(agent.cardUrl, CARD);
  assert.equal(agent.endpoint.replace(/\/$/, ''), card.url.replace(/\/$/, ''));
  assert.equal(agent.card?.name, NAME);

  const table = await coordctl(['agent', 'list']);
  assert.equal(table.code, 0, table.stderr);
  const row = table.stdout.split('\n').find((l) => l.startsWith(`${NAME}\t`));
  assert.ok(row, table.stdout);
  assert.deepEqual(row.split('\t').slice(2), ['JSONRPC 0.3', CARD]);
});

for (const { binding, make } of CLIENTS) {
  test(`${binding} 1.0 client: blocking send; the stored task, executed once`, async () => {
    const client = await make();
    const text = unique(`hello over ${binding}`);
    const task = asTask(await client.sendMessage(sendRequest(text), bounded()));
    assertState(task, TaskState.TASK_STATE_COMPLETED);
    assert.equal(textOf(task.status.message), `js03 echo: ${text}`);
    assert.equal(task.artifacts[0]?.artifactId, 'echo');
    assert.equal(textOf(task.artifacts[0]), text);
    const run = executedOnce(text);
    assertNoAgentId(run.taskId, task.id, Task.toJSON(task), 'the answer');

    const got = await client.getTask(getTaskRequest({ id: task.id, historyLength: 10 }), bounded());
    assertState(got, TaskState.TASK_STATE_COMPLETED);
    assert.equal(got.id, task.id);
    assert.equal(textOf(got.history[0]), text);
    assert.equal(got.artifacts.length, 1, JSON.stringify(Task.toJSON(got).artifacts));
    assert.equal(textOf(got.artifacts[0]), text);
    assertNoAgentId(run.taskId, got.id, Task.toJSON(got), 'the stored task');
  });

  test(`${binding} 1.0 client: streaming send; the agent's events under the coordinator's id`, async () => {
    const client = await make();
    const text = unique(`stream over ${binding}`);
    const events = await collect(client.sendMessageStream(sendRequest(text), bounded()));
    const cases = eventCases(events);
    assert.equal(cases[0], 'task', `events: ${cases}`);
    assert.ok(cases.includes('artifactUpdate'), `events: ${cases}`);
    assert.ok(events.some((e) => eventState(e) === TaskState.TASK_STATE_WORKING), `events: ${cases}`);
    assert.equal(eventState(events.at(-1)), TaskState.TASK_STATE_COMPLETED);
    const id = events[0].payload.value.id;
    const run = executedOnce(text);
    assertNoAgentId(run.taskId, id, events.map((e) => StreamResponse.toJSON(e)), 'the stream');
    const got = await client.getTask(getTaskRequest({ id }), bounded());
    assertState(got, TaskState.TASK_STATE_COMPLETED);
    assert.equal(textOf(got.artifacts[0]), text);
  });

  test(`${binding} 1.0 client: multi-turn; the follow-up reaches the agent's own task`, async () => {
    const client = await make();
    const ask = unique('ask');
    const first = asTask(await client.sendMessage(sendRequest(ask), bounded()));
    assertState(first, TaskState.TASK_STATE_INPUT_REQUIRED);
    assert.equal(textOf(first.status.message), 'what should I echo?');
    const reply = unique('second turn');
    const second = asTask(
      await client.sendMessage(
        sendRequest(reply, { message: { taskId: first.id, contextId: first.contextId } }),
        bounded(),
      ),
    );
    assert.equal(second.id, first.id);
    assertState(second, TaskState.TASK_STATE_COMPLETED);
    assert.equal(textOf(second.status.message), `js03 echo: ${reply}`);
    const [one, two] = [executedOnce(ask), executedOnce(reply)];
    assert.equal(two.taskId, one.taskId, 'the follow-up went to another task of the agent');
    assertNoAgentId(one.taskId, second.id, Task.toJSON(second), 'the second answer');
  });

  test(`${binding} 1.0 client: a cancel is forwarded to the agent (tasks/cancel)`, async () => {
    const client = await make();
    const hold = unique('hold');
    const submitted = asTask(
      await client.sendMessage(sendRequest(hold, { configuration: { returnImmediately: true } }), bounded()),
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
    assert.equal(eventState(events.at(-1)), TaskState.TASK_STATE_CANCELED);
    const got = await client.getTask(getTaskRequest({ id: submitted.id }), bounded());
    assertState(got, TaskState.TASK_STATE_CANCELED);
    assert.equal(textOf(got.status.message), 'canceled by request', 'the agent canceled it');
    assertNoAgentId(executedOnce(hold).taskId, got.id, Task.toJSON(got), 'the canceled task');
  });

  test(`${binding} 1.0 client: a bare Message answer is the answer; the task keeps it`, async () => {
    const client = await make();
    const text = unique('message');
    const answer = await client.sendMessage(sendRequest(text), bounded());
    assert.ok(
      answer && 'messageId' in answer && !('status' in answer),
      `expected a Message, got ${JSON.stringify(answer)}`,
    );
    assert.equal(textOf(answer), 'a bare message from the js03 agent');
    assert.ok(answer.taskId, `the Message names no task: ${JSON.stringify(Message.toJSON(answer))}`);
    const run = executedOnce(text);
    assertNoAgentId(run.taskId, answer.taskId, Message.toJSON(answer), 'the Message');
    const task = await client.getTask(getTaskRequest({ id: answer.taskId }), bounded());
    assertState(task, TaskState.TASK_STATE_COMPLETED);
    assert.equal(textOf(task.status.message), 'a bare message from the js03 agent');
    const streamed = unique('message');
    const events = await collect(client.sendMessageStream(sendRequest(streamed), bounded()));
    assert.deepEqual(eventCases(events), ['task', 'message']);
    executedOnce(streamed);
  });
}

// --- The SDK 0.3 JSON-RPC client on the coordinator's 0.3 binding: 0.3 on both sides.

function v03() {
  return new JsonRpcTransport({ endpoint: `${COORD_HTTP}/agents/${NAME}` });
}

function v03Message(text, fields = {}) {
  seq += 1;
  return {
    kind: 'message',
    messageId: `sdk03-agent-${process.pid}-${seq}`,
    role: 'user',
    parts: [{ kind: 'text', text }],
    ...fields,
  };
}

const v03Text = (message) =>
  (message?.parts ?? []).filter((p) => p.kind === 'text').map((p) => p.text).join('');

test('0.3 client: message/send and tasks/get; the stored task in 0.3 JSON', async () => {
  const c = v03();
  const text = unique('hello in 0.3');
  const task = await c.sendMessage({ message: v03Message(text) }, bounded());
  assert.equal(task.kind, 'task', JSON.stringify(task));
  assert.equal(task.status.state, 'completed');
  assert.equal(v03Text(task.status.message), `js03 echo: ${text}`);
  assert.equal(task.artifacts[0].artifactId, 'echo');
  assert.equal(task.artifacts[0].parts[0].kind, 'text');
  assert.equal(task.artifacts[0].parts[0].text, text);
  const run = executedOnce(text);
  assertNoAgentId(run.taskId, task.id, task, 'the 0.3 answer');
  const read = await c.getTask({ id: task.id, historyLength: 10 }, bounded());
  assert.equal(read.id, task.id);
  assert.equal(read.history[0].role, 'user');
  assert.equal(v03Text(read.history[0]), text);
  assertNoAgentId(run.taskId, read.id, read, 'the 0.3 stored task');
});

test('0.3 client: message/stream; task, artifact, one final completed update', async () => {
  const text = unique('streamed in 0.3');
  const events = [];
  for await (const event of v03().sendMessageStream({ message: v03Message(text) }, bounded())) {
    events.push(event);
  }
  assert.equal(events[0].kind, 'task', JSON.stringify(events));
  assert.ok(events.some((e) => e.kind === 'artifact-update'), JSON.stringify(events));
  const last = events.at(-1);
  assert.equal(last.kind, 'status-update');
  assert.equal(last.status.state, 'completed');
  assert.equal(last.final, true);
  assert.equal(events.filter((e) => e.final).length, 1, JSON.stringify(events));
  assertNoAgentId(executedOnce(text).taskId, events[0].id, events, 'the 0.3 stream');
});

test('0.3 client: multi-turn with the task id the coordinator gave', async () => {
  const c = v03();
  const ask = unique('ask');
  const first = await c.sendMessage({ message: v03Message(ask) }, bounded());
  assert.equal(first.status.state, 'input-required', JSON.stringify(first));
  const reply = unique('second in 0.3');
  const second = await c.sendMessage(
    { message: v03Message(reply, { taskId: first.id, contextId: first.contextId }) },
    bounded(),
  );
  assert.equal(second.id, first.id);
  assert.equal(second.status.state, 'completed');
  assert.equal(v03Text(second.status.message), `js03 echo: ${reply}`);
  assert.equal(executedOnce(reply).taskId, executedOnce(ask).taskId);
});

test('0.3 client: non-blocking send, tasks/resubscribe, tasks/cancel', async () => {
  const c = v03();
  const hold = unique('hold');
  const submitted = await c.sendMessage(
    { message: v03Message(hold), configuration: { blocking: false } },
    bounded(),
  );
  assert.equal(submitted.kind, 'task', JSON.stringify(submitted));
  let canceled;
  const events = [];
  for await (const event of c.resubscribeTask({ id: submitted.id }, bounded())) {
    events.push(event);
    const state = event.kind === 'task' || event.kind === 'status-update' ? event.status.state : undefined;
    if (canceled === undefined && state === 'working') {
      canceled = await c.cancelTask({ id: submitted.id }, bounded());
    }
  }
  assert.ok(canceled, `never saw working: ${JSON.stringify(events)}`);
  assert.equal(events.at(-1).status?.state, 'canceled', JSON.stringify(events));
  const read = await waitUntil('the task to read canceled', async () => {
    const t = await c.getTask({ id: submitted.id }, bounded());
    return t.status.state === 'canceled' && t;
  });
  assertNoAgentId(executedOnce(hold).taskId, read.id, read, 'the canceled 0.3 task');
});

// --- coordctl.

test('`coordctl send js03 --wait`: the completed task and its artifact as stored', async () => {
  const text = unique('from coordctl');
  const sent = await coordctl(['send', NAME, ...text.split(' '), '--wait', '--for', '20s', '--json']);
  assert.equal(sent.code, 0, `${sent.stdout}\n${sent.stderr}`);
  const task = JSON.parse(sent.stdout.trim().split('\n').pop());
  assert.equal(task.status.state, 'TASK_STATE_COMPLETED');
  assert.equal(task.status.message.parts[0].text, `js03 echo: ${text}`);
  assert.equal(task.artifacts[0].artifactId, 'echo');
  assert.equal(task.artifacts[0].parts[0].text, text);
  const run = executedOnce(text);
  assertNoAgentId(run.taskId, task.id, task, 'coordctl send');

  const watched = await coordctl(['watch', task.id, '--for', '10s', '--json']);
  assert.equal(watched.code, 0, `${watched.stdout}\n${watched.stderr}`);
  const stored = JSON.parse(watched.stdout.trim().split('\n').pop());
  assert.equal(stored.id, task.id);
  assert.deepEqual(stored.artifacts, task.artifacts);
  assert.deepEqual(stored.status, task.status);
});

test('no message the tests sent was executed twice by the agent', () => {
  const seen = new Map();
  for (const e of executions()) seen.set(e.text, (seen.get(e.text) ?? 0) + 1);
  const twice = [...seen].filter(([, n]) => n > 1);
  assert.deepEqual(twice, []);
  assert.ok(seen.size >= 20, `only ${seen.size} executions logged`);
});
