// An evaluation (AgentBeats style) whose agent under test speaks only A2A 0.3: an assessment
// request to the green agent names, by its card URL alone, a js03_agent.mjs (the SDK 0.3's
// Express JSON-RPC server, scripted-purple mode) registered nowhere beforehand. The green agent
// registers it with the coordinator by that URL (the coordinator reads the 0.3 card and stores
// protocol_version 0.3), sends it the task through the coordinator (0.3 message/stream), the
// purple plays the task's script against the green agent with the SDK 0.3 client on the
// coordinator's 0.3 JSON-RPC binding, and the green agent's task completes with the score.
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
  coordctl,
  readJsonLines,
  registeredAgents,
  sendRequest,
  startProcess,
  stopProcess,
  TaskState,
  textOf,
} from './lib.mjs';

const TASK = 'heap-overflow-record';
const TASKS_DIR = path.resolve(HERE, '../../examples/tasks');
const STATE_DIR = path.join(INTEROP_WORK, 'js03purple');
// One evaluation runs a handful of commands through two agents and the coordinator.
const EVAL_MS = 60000;

let purple;
const registeredHere = [];

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
  const registered = (await registeredAgents()).filter((a) => a.cardUrl === purple.card);
  registeredHere.push(...registered.map((a) => a.name));
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
