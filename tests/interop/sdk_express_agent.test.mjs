// Agents served by the official A2A JavaScript SDK's Express server (js_rpc_agent.mjs), behind
// the coordinator: "jsrpc" (jsonRpcHandler) and "jsrest" (restHandler), each registered by run.sh
// with `coordctl agent register <name> --card <its card URL>` and nothing else. The coordinator
// fetched their cards and delivers over JSON-RPC or HTTP+JSON; clients reach them through the
// coordinator with the SDK's gRPC client, its JSON-RPC client (from the coordinator's per-agent
// card) and `coordctl send`.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
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
  registeredAgents,
  sendRequest,
  subscribeRequest,
  TaskState,
  textOf,
} from './lib.mjs';

const AGENTS = [
  { name: 'jsrpc', binding: 'JSONRPC', card: process.env.JSRPC_CARD },
  { name: 'jsrest', binding: 'HTTP+JSON', card: process.env.JSREST_CARD },
];

test('the registry took the cards: endpoint and binding from each card', async () => {
  const agents = await registeredAgents();
  for (const { name, binding, card } of AGENTS) {
    assert.ok(card, 'run.sh sets JSRPC_CARD and JSREST_CARD');
    const agent = agents.find((a) => a.name === name);
    assert.ok(agent, `${name} is not registered: ${JSON.stringify(agents)}`);
    assert.equal(agent.cardUrl, card);
    assert.equal(agent.protocolBinding, binding);
    const base = card.replace('/.well-known/agent-card.json', '');
    assert.equal(agent.endpoint.replace(/\/$/, ''), base);
    assert.equal(agent.card?.name, name);
  }
});

for (const { name, binding } of AGENTS) {
  test(`${name} (${binding}): blocking send from the SDK's gRPC client`, async () => {
    const client = await clientFor(name);
    const task = asTask(await client.sendMessage(sendRequest(`hello ${name}`), bounded()));
    assertState(task, TaskState.TASK_STATE_COMPLETED);
    assert.equal(textOf(task.status.message), `js rpc echo: hello ${name}`);
    assert.equal(task.artifacts[0]?.artifactId, 'echo');
    assert.equal(textOf(task.artifacts[0]), `hello ${name}`);
    const got = await client.getTask(getTaskRequest({ id: task.id, historyLength: 10 }), bounded());
    assert.equal(textOf(got.history[0]), `hello ${name}`);
  });

  test(`${name} (${binding}): streaming send; the agent's events come back`, async () => {
    const client = await clientFor(name);
    const events = await collect(client.sendMessageStream(sendRequest(`stream ${name}`), bounded()));
    const cases = eventCases(events);
    assert.equal(cases[0], 'task', `events: ${cases}`);
    assert.ok(cases.includes('artifactUpdate'), `events: ${cases}`);
    assert.ok(events.some((e) => eventState(e) === TaskState.TASK_STATE_WORKING), `events: ${cases}`);
    assert.equal(eventState(events[events.length - 1]), TaskState.TASK_STATE_COMPLETED);
  });

  test(`${name} (${binding}): multi-turn; the follow-up reaches the agent's own task`, async () => {
    const client = await clientFor(name);
    const first = asTask(await client.sendMessage(sendRequest('ask'), bounded()));
    assertState(first, TaskState.TASK_STATE_INPUT_REQUIRED);
    assert.equal(textOf(first.status.message), 'what should I echo?');
    const second = asTask(
      await client.sendMessage(
        sendRequest('second turn', { message: { taskId: first.id, contextId: first.contextId } }),
        bounded(),
      ),
    );
    assert.equal(second.id, first.id);
    assertState(second, TaskState.TASK_STATE_COMPLETED);
    assert.equal(textOf(second.status.message), 'js rpc echo: second turn');
  });

  test(`${name} (${binding}): a cancel is forwarded to the agent`, async () => {
    const client = await clientFor(name);
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
    assert.equal(eventState(events[events.length - 1]), TaskState.TASK_STATE_CANCELED);
    const got = await client.getTask(getTaskRequest({ id: submitted.id }), bounded());
    assertState(got, TaskState.TASK_STATE_CANCELED);
  });

  test(`${name} (${binding}): a bare Message answer is the answer; the task keeps it`, async () => {
    const client = await clientFor(name);
    const answer = await client.sendMessage(sendRequest('message'), bounded());
    assert.ok(
      answer && 'messageId' in answer && !('status' in answer),
      `expected a Message, got ${JSON.stringify(answer)}`,
    );
    assert.equal(textOf(answer), 'a bare message from the js rpc agent');
    assert.ok(answer.taskId, `the Message names no task: ${JSON.stringify(answer)}`);
    const task = await client.getTask(getTaskRequest({ id: answer.taskId }), bounded());
    assertState(task, TaskState.TASK_STATE_COMPLETED);
    assert.equal(textOf(task.status.message), 'a bare message from the js rpc agent');
    const events = await collect(client.sendMessageStream(sendRequest('message'), bounded()));
    assert.deepEqual(eventCases(events), ['task', 'message']);
  });
}

test('jsrpc through the coordinator with the SDK JSON-RPC client (per-agent card)', async () => {
  const client = await bindingClient(agentCardUrl('jsrpc'), 'JSONRPC');
  const task = asTask(await client.sendMessage(sendRequest('json-rpc both ways'), bounded()));
  assertState(task, TaskState.TASK_STATE_COMPLETED);
  assert.equal(textOf(task.status.message), 'js rpc echo: json-rpc both ways');
  const events = await collect(client.sendMessageStream(sendRequest('stream both ways'), bounded()));
  assert.equal(eventState(events[events.length - 1]), TaskState.TASK_STATE_COMPLETED);
});

test('jsrpc through `coordctl send --wait`', async () => {
  const sent = await coordctl(['send', 'jsrpc', 'from', 'coordctl', '--wait', '--for', '20s', '--json']);
  assert.equal(sent.code, 0, `${sent.stdout}\n${sent.stderr}`);
  const task = JSON.parse(sent.stdout.trim().split('\n').pop());
  assert.equal(task.status.state, 'TASK_STATE_COMPLETED');
  assert.match(JSON.stringify(task.status.message), /js rpc echo: from coordctl/);
});
