// An evaluation as platforms run it (AgentBeats style): an assessment request to the green
// agent names the agent under test by its card URL only, and that agent is a JavaScript SDK
// agent on the Express JSON-RPC server (js_rpc_agent.mjs, scripted-purple mode), registered
// nowhere beforehand. The green agent registers it with the coordinator by card URL, sends it
// the task through the coordinator (which delivers over JSON-RPC), the JS agent plays the task's
// script against the green agent through the coordinator's JSON-RPC binding, and the green
// agent's task completes with the score. Bad requests are refused and register nothing.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import {
  HERE,
  agentCardUrl,
  assertState,
  assessmentRequest,
  asTask,
  bindingClient,
  coordctl,
  registeredAgents,
  sendRequest,
  startJsRpcAgent,
  stopProcess,
  TaskState,
  textOf,
} from './lib.mjs';

const TASK = 'heap-overflow-record';
const TASKS_DIR = path.resolve(HERE, '../../examples/tasks');
// One evaluation runs a handful of commands through two agents and the coordinator.
const EVAL_MS = 60000;

let purple;
const registeredHere = [];

before(async () => {
  purple = await startJsRpcAgent('assessment-purple', [
    '--name=jspurple',
    `--green_card=${agentCardUrl('green')}`,
    `--tasks_dir=${TASKS_DIR}`,
  ]);
});

after(async () => {
  // The agents the green agent registered for this file go again, so that other files see the
  // registry run.sh made.
  for (const name of registeredHere) await coordctl(['agent', 'rm', name]);
  await stopProcess(purple?.proc);
});

test('bad assessment requests are refused with what is wrong, and register nothing', async () => {
  const green = await bindingClient(agentCardUrl('green'), 'JSONRPC');
  const before = (await registeredAgents()).map((a) => a.name).sort();
  const cases = [
    [{}, { task_ids: [TASK] }, /no participant plays the role "purple"/],
    [{ purple: 'ftp://127.0.0.1/card.json' }, { task_ids: [TASK] }, /is not an http:\/\/ or https:\/\/ URL/],
    [{ purple: purple.card }, { task_ids: 'not a list' }, /config.task_ids must be a list/],
    [{ purple: purple.card }, { task_ids: ['no-such-task'] }, /unknown task id "no-such-task"/],
    [{ purple: purple.card }, undefined, /"config" is missing/],
  ];
  for (const [participants, config, expected] of cases) {
    const task = asTask(
      await green.sendMessage(assessmentRequest(participants, config), {
        signal: AbortSignal.timeout(EVAL_MS),
      }),
    );
    assertState(task, TaskState.TASK_STATE_REJECTED, JSON.stringify({ participants, config }));
    assert.match(textOf(task.status.message), expected);
  }
  const missing = asTask(
    await green.sendMessage(
      sendRequest('', { message: { parts: [{ data: { config: { task_ids: [TASK] } } }] } }),
      { signal: AbortSignal.timeout(EVAL_MS) },
    ),
  );
  assertState(missing, TaskState.TASK_STATE_REJECTED);
  assert.match(textOf(missing.status.message), /"participants" is missing/);
  assert.deepEqual((await registeredAgents()).map((a) => a.name).sort(), before);
});

test('an assessment request names the JS JSON-RPC purple by card URL; it is scored', async () => {
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

  // Registered once, under the name derived from the role and the URL, delivered over JSON-RPC.
  assert.equal(registered.length, 1, JSON.stringify(registered));
  assert.match(registered[0].name, /^purple-[0-9a-f]{12}$/);
  assert.equal(registered[0].protocolBinding, 'JSONRPC');

  // The same participant again, as AgentBeats sends it (the JSON as text, the agent's base URL),
  // on both tasks: the registration is reused, each task is scored in a context of its own.
  const both = asTask(
    await green.sendMessage(
      sendRequest(
        JSON.stringify({
          participants: { purple: purple.base },
          config: { task_ids: [TASK, 'uaf-list-remove'] },
        }),
      ),
      { signal: AbortSignal.timeout(EVAL_MS) },
    ),
  );
  assertState(both, TaskState.TASK_STATE_COMPLETED, `green: ${textOf(both.status.message)}`);
  const byId = Object.fromEntries(both.artifacts.map((a) => [a.artifactId, a.parts[0]?.content?.value]));
  assert.equal(byId[`score-${TASK}`]?.score, 1, JSON.stringify(byId));
  assert.equal(byId['score-uaf-list-remove']?.score, 1, JSON.stringify(byId));
  assert.equal(byId.score?.score, 1, JSON.stringify(byId));
  assert.equal(byId.score?.tasks?.length, 2, JSON.stringify(byId));
  assert.equal((await registeredAgents()).filter((a) => a.cardUrl === purple.card).length, 1);
});
