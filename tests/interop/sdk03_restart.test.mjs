// A2A 0.3 on both sides of a coordinator killed -9: a client on the JavaScript SDK 0.3
// (a2a-sdk-v03, JSON-RPC) streams a message to an agent on the same SDK's Express server
// (js03_agent.mjs, registered by its pure 0.3 card); the coordinator is killed -9 mid-stream and
// restarted on the same data dir and ports. The client resubscribes in 0.3 (tasks/resubscribe)
// and reads the task to COMPLETED with the agent's artifact once, and the agent executed the
// message once: the restarted coordinator followed the agent's own task (tasks/resubscribe on
// the agent) instead of sending the message again. This file starts its own coordinator and
// agent and stops them by PID; the task waits at the agent's gate (a file), so each step waits
// for the state it needs, never for a time.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { JsonRpcTransport } from 'a2a-sdk-v03/client';
import {
  INTEROP_WORK,
  bounded,
  coordctl,
  readJsonLines,
  startCoordinator,
  startJs03Agent,
  stopProcess,
  waitUntil,
} from './lib.mjs';

const AGENT = 'js03kill';
const dir = path.join(INTEROP_WORK, 'restart03');
const state = path.join(dir, 'agent');
let coordinator;
let agent;

const client = () => new JsonRpcTransport({ endpoint: `${coordinator.http}/agents/${AGENT}` });
const textOf = (message) =>
  (message?.parts ?? []).filter((p) => p.kind === 'text').map((p) => p.text).join('');
const stateOf = (event) => (event.kind === 'task' ? event.status?.state : event.status?.state);

before(async () => {
  fs.mkdirSync(state, { recursive: true });
  coordinator = await startCoordinator('restart03-coordinator', path.join(dir, 'data'));
  agent = await startJs03Agent('restart03-agent', [`--name=${AGENT}`, `--state_dir=${state}`]);
  const registered = await coordctl(['agent', 'register', AGENT, '--card', agent.card], coordinator.addr);
  assert.equal(registered.code, 0, `${registered.stdout}\n${registered.stderr}`);
  assert.match(registered.stdout, /A2A 0\.3/);
});

after(async () => {
  await stopProcess(agent?.proc);
  await stopProcess(coordinator?.proc);
});

test('0.3 client and 0.3 agent: the coordinator killed -9 mid-stream, resubscribed, executed once', async () => {
  const messageId = `restart03-${process.pid}`;
  let taskId;
  let sawWorking;
  const working = new Promise((resolve) => (sawWorking = resolve));
  const first = (async () => {
    for await (const event of client().sendMessageStream(
      {
        message: {
          kind: 'message',
          messageId,
          role: 'user',
          parts: [{ kind: 'text', text: 'gate:kill03' }],
        },
      },
      bounded(),
    )) {
      if (event.kind === 'task') taskId = event.id;
      if (stateOf(event) === 'working') sawWorking();
    }
  })().then(
    () => 'ended',
    (err) => err,
  );
  await working;
  const { grpcPort, httpPort } = coordinator;
  await stopProcess(coordinator.proc, 'SIGKILL');
  await first;
  assert.ok(taskId, 'no task id before the kill');

  coordinator = await startCoordinator('restart03-coordinator', path.join(dir, 'data'), {
    grpcPort,
    httpPort,
  });
  const again = await waitUntil('the task back after the restart', () =>
    client().getTask({ id: taskId }, bounded()),
  );
  assert.notEqual(again.status.state, 'completed', JSON.stringify(again.status));

  // Resubscribe in 0.3, then let the agent finish: the stream ends completed.
  const events = [];
  let sawSnapshot;
  const snapshot = new Promise((resolve) => (sawSnapshot = resolve));
  const resubscribed = (async () => {
    for await (const event of client().resubscribeTask({ id: taskId }, bounded())) {
      events.push(event);
      sawSnapshot();
    }
  })();
  await snapshot;
  fs.writeFileSync(path.join(state, 'kill03.open'), '');
  await resubscribed;
  assert.equal(stateOf(events[events.length - 1]), 'completed', JSON.stringify(events));

  const done = await client().getTask({ id: taskId, historyLength: 50 }, bounded());
  assert.equal(done.status.state, 'completed');
  assert.equal(textOf(done.status.message), 'gate kill03 passed');
  assert.deepEqual(done.artifacts.map((a) => textOf(a)), ['kill03']);
  // Executed once at the agent, under one task id of its own.
  const executions = readJsonLines(path.join(state, 'executions.jsonl')).filter(
    (e) => e.text === 'gate:kill03',
  );
  assert.equal(executions.length, 1, JSON.stringify(executions));
});
