// Restarts with the official A2A JavaScript SDK on both sides of the coordinator: an agent on the
// SDK's Express JSON-RPC server (js_rpc_agent.mjs) killed -9 and restarted mid-task, and the
// coordinator killed -9 mid-stream and restarted on the same data dir and ports. Nothing is
// lost on any binding: clients on gRPC, JSON-RPC and HTTP+JSON each get their task COMPLETED
// (their open stream, or a resubscription after the coordinator came back), with the agent's
// artifact once. This file starts its own coordinator and agent (so it kills nobody else's) and
// stops them by PID; the tasks wait at the agent's gates (files), so nothing here depends on
// timing: each step waits for the state it needs.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import {
  INTEROP_WORK,
  TaskState,
  agentCardUrl,
  asTask,
  assertState,
  bindingClient,
  bounded,
  clientFor,
  collect,
  coordctl,
  eventState,
  getTaskRequest,
  sendRequest,
  startCoordinator,
  startJsRpcAgent,
  stopProcess,
  subscribeRequest,
  textOf,
  waitUntil,
} from './lib.mjs';

const AGENT = 'jskill';
const dir = path.join(INTEROP_WORK, 'restart');
const gates = path.join(dir, 'gates');
let coordinator;
let agent;

async function startAgent(port = 0) {
  return startJsRpcAgent('restart-agent', [
    `--listen=127.0.0.1:${port}`,
    `--name=${AGENT}`,
    `--state_dir=${gates}`,
  ]);
}

// A client of the test's coordinator for `binding`: gRPC from the coordinator's card (tenant),
// JSON-RPC and HTTP+JSON from the agent's per-agent card.
async function client(binding) {
  if (binding === 'GRPC') return clientFor(AGENT, coordinator.http);
  return bindingClient(agentCardUrl(AGENT, coordinator.http), binding);
}

const BINDINGS = ['GRPC', 'JSONRPC', 'HTTP+JSON'];

function openGate(name) {
  fs.writeFileSync(path.join(gates, `${name}.open`), '');
}

function isEnded(state) {
  return [
    TaskState.TASK_STATE_COMPLETED,
    TaskState.TASK_STATE_FAILED,
    TaskState.TASK_STATE_CANCELED,
    TaskState.TASK_STATE_REJECTED,
  ].includes(state);
}

before(async () => {
  fs.mkdirSync(gates, { recursive: true });
  coordinator = await startCoordinator('restart-coordinator', path.join(dir, 'data'));
  agent = await startAgent();
  const registered = await coordctl(['agent', 'register', AGENT, '--card', agent.card], coordinator.addr);
  assert.equal(registered.code, 0, `${registered.stdout}\n${registered.stderr}`);
});

after(async () => {
  await stopProcess(agent?.proc);
  await stopProcess(coordinator?.proc);
});

// Checks the ended task on every binding: COMPLETED, the gate's artifact once, the message once.
async function assertCompletedEverywhere(taskId, gate) {
  for (const binding of BINDINGS) {
    const c = await client(binding);
    const got = await c.getTask(getTaskRequest({ id: taskId, historyLength: 50 }), bounded());
    assertState(got, TaskState.TASK_STATE_COMPLETED, `${binding} view of ${gate}`);
    assert.equal(textOf(got.status.message), `gate ${gate} passed`);
    assert.deepEqual(
      got.artifacts.map((a) => textOf(a)),
      [gate],
      `${binding}: artifacts of ${gate}`,
    );
    assert.deepEqual(
      got.history.filter((m) => m.role === 1).map(textOf),
      [`gate:${gate}`],
      `${binding}: user messages of ${gate}`,
    );
  }
}

// The restarted SDK agent kept its tasks in memory: asked for the task id it gave on the first
// attempt, it answers TaskNotFound, and the coordinator starts the message over as a new task at
// the agent (gateway.cc, Attempt), so every task completes.
test('the agent killed -9 mid-task and restarted on its port: every task completes', async () => {
  // One task per client binding, each waiting at its gate at the agent; a stream open on each.
  const tasks = [];
  for (const binding of BINDINGS) {
    const gate = `agent-${binding.replace('+', '')}`;
    const c = await client(binding);
    const task = asTask(
      await c.sendMessage(
        sendRequest(`gate:${gate}`, { configuration: { returnImmediately: true } }),
        bounded(),
      ),
    );
    let sawWorking;
    const working = new Promise((resolve) => (sawWorking = resolve));
    const stream = collect(c.resubscribeTask(subscribeRequest({ id: task.id }), bounded()), async (e) => {
      if (eventState(e) === TaskState.TASK_STATE_WORKING) sawWorking();
    });
    tasks.push({ binding, gate, task, stream, working });
  }
  await Promise.all(tasks.map((t) => t.working));

  await stopProcess(agent.proc, 'SIGKILL');
  agent = await startAgent(agent.port);
  for (const { gate } of tasks) openGate(gate);

  for (const { binding, gate, task, stream } of tasks) {
    const events = await stream;
    assert.equal(
      eventState(events[events.length - 1]),
      TaskState.TASK_STATE_COMPLETED,
      `${binding} stream of ${gate}: ${JSON.stringify(events.map(eventState))} ${JSON.stringify(events.map((e) => textOf(e.payload?.value?.status?.message)))}`,
    );
    await assertCompletedEverywhere(task.id, gate);
  }
});

test('messages sent on every binding while the agent is down are delivered once it is back', async () => {
  await stopProcess(agent.proc, 'SIGKILL');
  const queued = [];
  for (const binding of BINDINGS) {
    const gate = `queued-${binding.replace('+', '')}`;
    const c = await client(binding);
    const task = asTask(
      await c.sendMessage(
        sendRequest(`gate:${gate}`, { configuration: { returnImmediately: true } }),
        bounded(),
      ),
    );
    assert.ok(!isEnded(task.status.state), `${binding}: ${JSON.stringify(task.status)}`);
    queued.push({ binding, gate, task, client: c });
  }
  agent = await startAgent(agent.port);
  for (const { gate } of queued) openGate(gate);
  for (const { binding, gate, task, client: c } of queued) {
    await waitUntil(`${binding}: the queued task to end`, async () => {
      const got = await c.getTask(getTaskRequest({ id: task.id }), bounded());
      return isEnded(got.status.state);
    });
    await assertCompletedEverywhere(task.id, gate);
  }
});

// On every binding, a streaming send of `gate:<prefix>-<binding>`, read until the agent works on
// it; then the coordinator is killed -9 and each stream ends with it (an error, or an end
// without a final state). Resolves to the tasks ({ binding, gate, id() }) and the ports to
// restart the coordinator on.
async function streamToGatesThenKillTheCoordinator(prefix) {
  const tasks = [];
  for (const binding of BINDINGS) {
    const gate = `${prefix}-${binding.replace('+', '')}`;
    const c = await client(binding);
    let taskId;
    let sawWorking;
    const working = new Promise((resolve) => (sawWorking = resolve));
    const stream = collect(c.sendMessageStream(sendRequest(`gate:${gate}`), bounded()), async (e) => {
      if (e.payload?.$case === 'task') taskId = e.payload.value.id;
      if (eventState(e) === TaskState.TASK_STATE_WORKING) sawWorking();
    }).then(
      () => 'ended',
      (err) => err,
    );
    tasks.push({ binding, gate, stream, working, id: () => taskId });
  }
  await Promise.all(tasks.map((t) => t.working));
  const { grpcPort, httpPort } = coordinator;
  await stopProcess(coordinator.proc, 'SIGKILL');
  for (const t of tasks) {
    await t.stream;
    assert.ok(t.id(), `${t.binding}: no task id before the kill`);
  }
  return { tasks, grpcPort, httpPort };
}

test('the coordinator killed -9 mid-stream and restarted: resubscribe on every binding', async () => {
  const { tasks, grpcPort, httpPort } = await streamToGatesThenKillTheCoordinator('coordinator');
  coordinator = await startCoordinator('restart-coordinator', path.join(dir, 'data'), {
    grpcPort,
    httpPort,
  });

  // Resubscribe while the tasks still wait at their gates (the coordinator delivered them
  // again), then open the gates: each new stream ends COMPLETED.
  const resubscribed = [];
  for (const t of tasks) {
    const c = await client(t.binding);
    const got = await waitUntil(`${t.binding}: the task back after the restart`, () =>
      c.getTask(getTaskRequest({ id: t.id() }), bounded()),
    );
    assert.ok(!isEnded(got.status.state), `${t.binding}: ${JSON.stringify(got.status)}`);
    let sawSnapshot;
    const snapshot = new Promise((resolve) => (sawSnapshot = resolve));
    const stream = collect(c.resubscribeTask(subscribeRequest({ id: t.id() }), bounded()), async (e) => {
      if (e.payload?.$case === 'task') sawSnapshot();
    });
    resubscribed.push({ ...t, stream, snapshot });
  }
  await Promise.all(resubscribed.map((t) => t.snapshot));
  for (const t of tasks) openGate(t.gate);
  for (const t of resubscribed) {
    const events = await t.stream;
    assert.equal(
      eventState(events[events.length - 1]),
      TaskState.TASK_STATE_COMPLETED,
      `${t.binding} resubscription: ${JSON.stringify(events.map(eventState))}`,
    );
    await assertCompletedEverywhere(t.id(), t.gate);
  }
});

// The agent finishes while the coordinator is down: its last events went to a stream that died
// with the coordinator. The restarted coordinator asks the agent for the task it had already
// taken (it does not send the message again, which the agent would refuse for a task that has
// ended) and takes its outcome: every task COMPLETED, with the artifact once.
test('the agent finishes while the coordinator is down: the outcome is taken on restart', async () => {
  const { tasks, grpcPort, httpPort } = await streamToGatesThenKillTheCoordinator('finished');
  for (const t of tasks) openGate(t.gate);
  await waitUntil('the agent to pass every gate', () => {
    const log = fs.readFileSync(agent.proc.log, 'utf8');
    return tasks.every((t) => log.includes(`passed gate ${t.gate} `));
  });
  coordinator = await startCoordinator('restart-coordinator', path.join(dir, 'data'), {
    grpcPort,
    httpPort,
  });
  for (const t of tasks) {
    const c = await client(t.binding);
    await waitUntil(`${t.binding}: the task to end after the restart`, async () => {
      const got = await c.getTask(getTaskRequest({ id: t.id() }), bounded());
      return isEnded(got.status.state);
    });
    await assertCompletedEverywhere(t.id(), t.gate);
  }
});
