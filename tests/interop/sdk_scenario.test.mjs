// Platform scenario files run by `coordctl scenario run` with agents we did not write: a green
// agent on the JavaScript SDK (js_rpc_agent.mjs --judge) that questions its participant at the
// URL it is handed, and a participant on the SDK too; and the same pair on the SDK 0.3
// (js03_agent.mjs), which the coordinator speaks 0.3 to. Every message between them passes through
// the coordinator, and the runner can be killed -9 mid-assessment and started again to follow
// the same assessment to its end. The agents are the runner's (started from the file's cmd); the
// participant's gate (a file) holds the assessment where a test needs it, so nothing here
// depends on timing.
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import {
  COORD_BIN_DIR,
  COORD_ADDR,
  COORD_HTTP,
  HERE,
  INTEROP_WORK,
  clientFor,
  coordctl,
  getTaskRequest,
  listTasksRequest,
  readJsonLines,
  textOf,
  waitUntil,
} from './lib.mjs';

const dir = path.join(INTEROP_WORK, 'scenario');
fs.mkdirSync(dir, { recursive: true });
const runs = [];

// A port nothing listens on now.
function freePort() {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

// The agents of a scenario, by the A2A version they speak: their script, what their echo answer
// starts with, and how `coordctl agent list` shows their binding.
const AGENTS = {
  '1.0': { script: 'js_rpc_agent.mjs', echo: 'js rpc echo: ', binding: 'JSONRPC' },
  '0.3': { script: 'js03_agent.mjs', echo: 'js03 echo: ', binding: 'JSONRPC 0.3' },
};

// A scenario file: the judge and one participant "solver" asking `questions`, both agents of
// `version`.
async function writeScenario(name, questions, stateDir, version = '1.0') {
  const agentCmd = (port, args) =>
    `${process.execPath} ${path.join(HERE, AGENTS[version].script)} --listen=127.0.0.1:${port} ${args}`;
  const [green, solver] = [await freePort(), await freePort()];
  const file = path.join(dir, `${name}.toml`);
  fs.writeFileSync(
    file,
    [
      '# written by sdk_scenario.test.mjs',
      '[green_agent]',
      `endpoint = "http://127.0.0.1:${green}"`,
      `cmd = "${agentCmd(green, '--name=judge --judge')}"`,
      '',
      '[[participants]]',
      'role = "solver"',
      `endpoint = "http://127.0.0.1:${solver}"`,
      `cmd = "${agentCmd(solver, `--name=solver --state_dir=${stateDir}`)}"`,
      '',
      '[config]',
      `questions = ${JSON.stringify(questions)}`,
      'unknown_key = { kept = true }',
      '',
    ].join('\n'),
  );
  return { file, ports: [green, solver] };
}

// Starts `coordctl scenario run` for run `runId`; resolves when it exits to
// { code, stdout, stderr }. `proc.child` can be killed meanwhile.
function startRunner(file, runId, extra = []) {
  const logs = path.join(dir, runId);
  runs.push(logs);
  const child = spawn(path.join(COORD_BIN_DIR, 'coordctl'), [
    `--target=${COORD_ADDR}`,
    'scenario',
    'run',
    file,
    `--run-id=${runId}`,
    `--gateway=${COORD_HTTP}`,
    `--logs=${logs}`,
    `--output=${path.join(dir, `${runId}.json`)}`,
    '--start-timeout=30s',
    '--for=60s',
    ...extra,
  ]);
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d) => (stdout += d));
  child.stderr.on('data', (d) => (stderr += d));
  const done = new Promise((resolve) =>
    child.on('exit', (code, signal) => resolve({ code: code ?? signal, stdout, stderr })),
  );
  return { child, done, logs, output: () => stdout };
}

function listening(port) {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    socket.on('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.on('error', () => resolve(false));
  });
}

// Whatever a failed test left running: the process groups the runners wrote down.
after(() => {
  for (const logs of runs) {
    for (const role of ['green_agent', 'solver']) {
      const pidFile = path.join(logs, `${role}.pid`);
      if (!fs.existsSync(pidFile)) continue;
      try {
        process.kill(-Number(fs.readFileSync(pidFile, 'utf8')), 'SIGKILL');
      } catch {}
    }
  }
});

async function solverTasks(runId) {
  const client = await clientFor(`${runId}.solver`);
  const listed = await client.listTasks(listTasksRequest({ pageSize: 100, historyLength: 10 }));
  return listed.tasks;
}

for (const version of Object.keys(AGENTS)) {
  test(`a scenario of ${version} SDK agents runs through the coordinator, which stores every message`, async () => {
    const runId = `sdk-scn-${version.replace('.', '')}-${process.pid}`;
    const state = path.join(dir, `${runId}-state`);
    const { file, ports } = await writeScenario(runId, ['2+2?', 'capital of France?'], state, version);
    const result = await startRunner(file, runId).done;
    assert.equal(result.code, 0, result.stderr + result.stdout);
    assert.match(result.stdout, /COMPLETED: assessment done/);

    const written = JSON.parse(fs.readFileSync(path.join(dir, `${runId}.json`), 'utf8'));
    assert.equal(written.run_id, runId);
    assert.equal(written.state, 'completed');
    assert.equal(written.assessments.length, 1);
    const [assessment] = written.assessments;
    assert.equal(assessment.context_id, `scenario-${runId}`);
    assert.equal(assessment.state, 'completed');
    const answers = JSON.parse(assessment.artifacts[0].parts[0].text).answers;
    const { echo, binding } = AGENTS[version];
    assert.deepEqual(answers, { solver: [`${echo}2+2?`, `${echo}capital of France?`] });
    // Both agents were registered from their cards, as the version they speak.
    const agents = await coordctl(['agent', 'list']);
    for (const role of ['green_agent', 'solver']) {
      assert.match(agents.stdout, new RegExp(`^${runId}\\.${role}\t\\S+\t${binding}\t`, 'm'));
    }

    // The green agent reached the participant through the coordinator: its questions are stored
    // there as the solver's tasks, and the solver executed each once.
    const tasks = await solverTasks(runId);
    assert.deepEqual(tasks.map((t) => textOf(t.history[0])).sort(), ['2+2?', 'capital of France?']);
    assert.equal(readJsonLines(path.join(state, 'executions.jsonl')).length, 2);
    // The request the green agent got: the participant's coordinator URL, the config as written.
    const green = await clientFor(`${runId}.green_agent`);
    const judged = await green.getTask(getTaskRequest({ id: assessment.task_id }));
    const request = JSON.parse(textOf(judged.history[0]));
    assert.deepEqual(request.participants, { solver: `${COORD_HTTP}/agents/${runId}.solver/` });
    assert.deepEqual(request.config.unknown_key, { kept: true });
    // The runner stopped what it started.
    for (const port of ports) assert.equal(await listening(port), false, `port ${port}`);
  });
}

test('--shards and --repeat run the parts of a config list side by side, each in its context', async () => {
  const runId = `sdk-scn-shards-${process.pid}`;
  const state = path.join(dir, `${runId}-state`);
  const { file } = await writeScenario(runId, ['q1', 'q2', 'q3'], state);
  const result = await startRunner(file, runId, [
    '--shards=2',
    '--shard-key=questions',
    '--repeat=2',
    '--max-in-flight=1',
  ]).done;
  assert.equal(result.code, 0, result.stderr + result.stdout);
  const written = JSON.parse(fs.readFileSync(path.join(dir, `${runId}.json`), 'utf8'));
  assert.equal(written.state, 'completed');
  const parts = written.assessments.map((a) => [
    a.shard,
    a.repeat,
    a.context_id,
    JSON.parse(a.artifacts[0].parts[0].text).answers.solver,
  ]);
  assert.deepEqual(parts, [
    [0, 0, `scenario-${runId}-s0-r0`, ['js rpc echo: q1']],
    [0, 1, `scenario-${runId}-s0-r1`, ['js rpc echo: q1']],
    [1, 0, `scenario-${runId}-s1-r0`, ['js rpc echo: q2', 'js rpc echo: q3']],
    [1, 1, `scenario-${runId}-s1-r1`, ['js rpc echo: q2', 'js rpc echo: q3']],
  ]);
  // Each question of a shard was asked once per repeat.
  assert.equal(readJsonLines(path.join(state, 'executions.jsonl')).length, 6);
  // scenario show and list read the run back from the coordinator.
  const shown = await coordctl(['scenario', 'show', runId]);
  assert.equal(shown.code, 0, shown.stderr);
  assert.equal((shown.stdout.match(/ COMPLETED  score (null|[0-9.]+)\n/g) ?? []).length, 4);
  const listed = await coordctl(['scenario', 'list']);
  assert.match(listed.stdout, new RegExp(`^${runId}  4 assessments: 4 COMPLETED$`, 'm'));
  // The participant was held to one message at a time (--max-in-flight), the judge was not.
  const agents = await coordctl(['agent', 'list']);
  assert.match(agents.stdout, new RegExp(`^${runId}\\.solver\t.*\tmax in flight 1$`, 'm'));
  assert.doesNotMatch(agents.stdout, new RegExp(`^${runId}\\.green_agent\t.*max in flight`, 'm'));
});

for (const version of Object.keys(AGENTS)) {
  test(`a runner killed -9 mid-assessment and run again follows the same assessment (${version})`, async () => {
    const runId = `sdk-scn-kill-${version.replace('.', '')}-${process.pid}`;
    const state = path.join(dir, `${runId}-state`);
    const gate = `scn${version.replace('.', '')}-${process.pid}`;
    const { file, ports } = await writeScenario(runId, [`gate:${gate}`], state, version);
    const first = startRunner(file, runId);
    await waitUntil('the solver at its gate', () =>
      readJsonLines(path.join(state, 'executions.jsonl')).some((e) => e.text === `gate:${gate}`),
    );
    first.child.kill('SIGKILL');
    await first.done;

    const second = startRunner(file, runId);
    await waitUntil('the second runner following', () => /following assessment/.test(second.output()));
    fs.writeFileSync(path.join(state, `${gate}.open`), '');
    const result = await second.done;
    assert.equal(result.code, 0, result.stderr + result.stdout);
    const written = JSON.parse(fs.readFileSync(path.join(dir, `${runId}.json`), 'utf8'));
    assert.deepEqual(JSON.parse(written.assessments[0].artifacts[0].parts[0].text).answers, {
      solver: [`gate ${gate} passed`],
    });
    // One assessment, one execution of its question.
    const green = await clientFor(`${runId}.green_agent`);
    const listed = await green.listTasks(listTasksRequest({ contextId: `scenario-${runId}` }));
    assert.equal(listed.tasks.length, 1);
    assert.equal(readJsonLines(path.join(state, 'executions.jsonl')).length, 1);
    // The second runner stopped the agents the first one had started.
    for (const port of ports) assert.equal(await listening(port), false, `port ${port}`);
  });
}

test('a port in use or a cmd that ends at once is refused, naming the agent', async () => {
  const busy = net.createServer();
  await new Promise((resolve) => busy.listen(0, '127.0.0.1', resolve));
  const port = busy.address().port;
  try {
    const file = path.join(dir, 'busy.toml');
    fs.writeFileSync(
      file,
      `[green_agent]\nendpoint = "http://127.0.0.1:${port}"\ncmd = "true"\n` +
        `[[participants]]\nrole = "p"\nendpoint = "http://127.0.0.1:${await freePort()}"\ncmd = "false"\n`,
    );
    const refused = await startRunner(file, `busy-${process.pid}`).done;
    assert.equal(refused.code, 3);
    assert.match(refused.stderr, new RegExp(`line 1: agent green_agent: 127\\.0\\.0\\.1:${port} is in use`));
    assert.doesNotMatch(refused.stderr, /started/);
  } finally {
    busy.close();
  }
  const file = path.join(dir, 'ends.toml');
  fs.writeFileSync(
    file,
    `[green_agent]\nendpoint = "http://127.0.0.1:${await freePort()}"\ncmd = "sh -c 'echo no model key >&2; exit 4'"\n` +
      `[[participants]]\nrole = "p"\nendpoint = "http://127.0.0.1:${await freePort()}"\n`,
  );
  const ended = await startRunner(file, `ends-${process.pid}`).done;
  assert.equal(ended.code, 3);
  assert.match(ended.stderr, /agent green_agent: its cmd ended \(exit code 4\)/);
  assert.match(ended.stderr, /no model key/);
});
