// An evaluation (AgentBeats style) whose agent under test speaks only A2A 0.3: an assessment
// request to the green agent names, by its card URL alone, a js03_agent.mjs (the SDK 0.3's
// Express JSON-RPC server, scripted-purple mode) registered nowhere beforehand. The green agent
// registers it with the coordinator by that URL (the coordinator reads the 0.3 card and stores
// protocol_version 0.3), sends it the task through the coordinator (0.3 message/stream), the
// purple plays the task's script against the green agent with the SDK 0.3 client on the
// coordinator's 0.3 JSON-RPC binding, and the green agent's task completes with the score.
// The assessment request is sent by a 1.0 client (the SDK 1.3's JSON-RPC client) and by a 0.3
// client (the SDK 0.3's JsonRpcTransport, message/stream to http://<http>/agents/green, which the
// coordinator translates for the C++ green agent); both evaluations are scored.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import {
  HERE,
  INTEROP_WORK,
  agentCardUrl,
  assertState,
  assessmentRequest,
  asTask,
  bindingClient,
  collect,
  coordctl,
  getTaskRequest,
  readJsonLines,
  registeredAgents,
  sendRequest,
  startProcess,
  stopProcess,
  TaskState,
  textOf,
  v03Client,
  v03Message,
  v03State,
  v03Text,
} from './lib.mjs';

const TASK = 'heap-overflow-record';
const TASKS_DIR = path.resolve(HERE, '../../examples/tasks');
const STATE_DIR = path.join(INTEROP_WORK, 'js03purple');
// One evaluation runs a handful of commands through two agents and the coordinator.
const EVAL_MS = 60000;

let purple;
const registeredHere = new Set();

// Notes the agents the green agent registered for the purple's card, for after() to remove.
async function purpleRegistrations() {
  const registered = (await registeredAgents()).filter((a) => a.cardUrl === purple.card);
  for (const agent of registered) registeredHere.add(agent.name);
  return registered;
}

// The purple's executions (js03_agent.mjs --state_dir).
function executions() {
  return readJsonLines(path.join(STATE_DIR, 'executions.jsonl'));
}

before(async () => {
  const proc = await startProcess(
    'js03-purple',
    process.execPath,
    [
      ...process.execArgv,
      path.join(HERE, 'js03_agent.mjs'),
      '--listen=127.0.0.1:0',
      '--name=js03purple',
      `--state_dir=${STATE_DIR}`,
      `--green_card=${agentCardUrl('green')}`,
      `--tasks_dir=${TASKS_DIR}`,
    ],
    /listening on (http:\/\/127\.0\.0\.1:\d+)/,
  );
  const base = proc.match[1];
  purple = { proc, base, card: `${base}/.well-known/agent-card.json` };
});

after(async () => {
  // The agents the green agent registered for this file go again, so that other files see the
  // registry run.sh made.
  for (const name of registeredHere) await coordctl(['agent', 'rm', name]);
  await stopProcess(purple?.proc);
});

test('an assessment request names the 0.3 purple by card URL; it is scored', async () => {
  const green = await bindingClient(agentCardUrl('green'), 'JSONRPC');
  const task = asTask(
    await green.sendMessage(assessmentRequest({ purple: purple.card }, { task_ids: [TASK] }), {
      signal: AbortSignal.timeout(EVAL_MS),
    }),
  );
  const registered = await purpleRegistrations();
  assertState(task, TaskState.TASK_STATE_COMPLETED, `green: ${textOf(task.status.message)}`);
  const score = task.artifacts.find((a) => a.artifactId === 'score');
  assert.ok(score, JSON.stringify(task.artifacts));
  const data = score.parts[0]?.content;
  assert.equal(data?.$case, 'data', JSON.stringify(score.parts));
  assert.equal(data.value.task_id, TASK);
  assert.equal(data.value.score, 1);
  assert.equal(data.value.line_accuracy, 1);

  // Registered once by its card URL, delivered to over JSON-RPC at 0.3.
  assert.equal(registered.length, 1, JSON.stringify(registered));
  assert.match(registered[0].name, /^purple-[0-9a-f]{12}$/);
  assert.equal(registered[0].protocolBinding, 'JSONRPC');
  assert.equal(registered[0].protocolVersion, '0.3');
  // The purple was asked once, and played the task it was given.
  const runs = executions();
  assert.equal(runs.length, 1, JSON.stringify(runs));

  // The same participant as AgentBeats sends it (the JSON as text, the agent's base URL), on
  // another task: the registration is reused.
  const again = asTask(
    await green.sendMessage(
      sendRequest(
        JSON.stringify({ participants: { purple: purple.base }, config: { task_ids: ['uaf-list-remove'] } }),
      ),
      { signal: AbortSignal.timeout(EVAL_MS) },
    ),
  );
  assertState(again, TaskState.TASK_STATE_COMPLETED, `green: ${textOf(again.status.message)}`);
  const byId = Object.fromEntries(again.artifacts.map((a) => [a.artifactId, a.parts[0]?.content?.value]));
  assert.equal(byId.score?.task_id, 'uaf-list-remove', JSON.stringify(byId));
  assert.equal(byId.score?.score, 1, JSON.stringify(byId));
  assert.equal((await registeredAgents()).filter((a) => a.cardUrl === purple.card).length, 1);
  assert.equal(executions().length, 2, JSON.stringify(executions()));
});

test('a 0.3 client sends the assessment request (message/stream to green); the 0.3 purple is scored', async () => {
  const before = executions().length;
  const green = v03Client('green');
  const request = v03Message('', {
    parts: [{ kind: 'data', data: { participants: { purple: purple.card }, config: { task_ids: [TASK] } } }],
  });
  const events = await collect(
    green.sendMessageStream({ message: request }, { signal: AbortSignal.timeout(EVAL_MS) }),
  );
  assert.equal(events[0].kind, 'task', JSON.stringify(events[0]));
  const last = events.at(-1);
  assert.equal(last.kind, 'status-update', JSON.stringify(last));
  assert.equal(last.final, true);
  assert.equal(last.status.state, 'completed', `green: ${v03Text(last.status.message)}`);
  assert.equal(events.filter((e) => e.final).length, 1);
  assert.ok(events.some((e) => v03State(e) === 'working'), JSON.stringify(events.map((e) => e.kind)));

  // The task as 0.3 reads it: the score as a 0.3 data part.
  const task = await green.getTask({ id: events[0].id }, { signal: AbortSignal.timeout(EVAL_MS) });
  assert.equal(task.status.state, 'completed');
  const score = task.artifacts.find((a) => a.artifactId === 'score');
  assert.ok(score, JSON.stringify(task.artifacts));
  assert.equal(score.parts[0]?.kind, 'data', JSON.stringify(score.parts));
  const data = score.parts[0].data;
  assert.equal(data.task_id, TASK);
  assert.equal(data.score, 1);
  assert.equal(data.line_accuracy, 1);
  // The same task as a 1.0 client reads it.
  const v10 = await bindingClient(agentCardUrl('green'), 'JSONRPC');
  const same = asTask(
    await v10.getTask(getTaskRequest({ id: task.id }), { signal: AbortSignal.timeout(EVAL_MS) }),
  );
  assertState(same, TaskState.TASK_STATE_COMPLETED);
  const v10Score = same.artifacts.find((a) => a.artifactId === 'score')?.parts[0]?.content;
  assert.equal(v10Score?.value?.score, 1, JSON.stringify(v10Score));

  // The purple: registered once by its card URL (at 0.3), asked once more.
  const registered = await purpleRegistrations();
  assert.equal(registered.length, 1, JSON.stringify(registered));
  assert.equal(registered[0].protocolVersion, '0.3');
  assert.equal(executions().length, before + 1, JSON.stringify(executions()));
});
