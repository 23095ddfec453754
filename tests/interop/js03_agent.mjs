// An A2A 0.3 agent served by the official JavaScript SDK 0.3 (@a2a-js/sdk 0.3.14, installed as
// a2a-sdk-v03): its Express JSON-RPC server (`jsonRpcHandler`) over a DefaultRequestHandler and
// an in-memory task store, its card, a pure 0.3 card (protocolVersion "0.3.0", `url`,
// preferredTransport "JSONRPC", no 1.0 `supportedInterfaces`), served at
// /.well-known/agent-card.json. The coordinator reaches it after
// `coordctl agent register <name> --card http://127.0.0.1:<port>/.well-known/agent-card.json`,
// and speaks 0.3 to it (message/stream, tasks/get, tasks/cancel, tasks/resubscribe).
//
// It behaves as js_rpc_agent.mjs does, in 0.3 JSON, by the first word of the message's first text
// part (the rest of the text only tells executions apart in the log below):
//   "hold ..."     works until canceled         "ask ..."  asks for input (input-required)
//   "message ..."  answers with a bare Message
//   "gate:<name>"  works until the file <--state_dir>/<name>.open exists, then completes with
//                  "gate <name> passed"
//   anything else: an "echo" artifact and completed with "js03 echo: <text>".
// With --green_card (the coordinator's per-agent card of the green agent), a message whose
// metadata names a "task_id" is played as the agent under test: the task's purple_script.json
// under --tasks_dir is sent action by action to the green agent through the coordinator with
// the SDK 0.3 client made from that card, in the message's context, and the task completes with
// green's answer to "submit".
// With --judge it is a green agent as evaluation platforms run them, in 0.3: a message whose text
// is an assessment request {"participants": {"<role>": "<base URL>"}, "config": {"questions":
// [...]}} sends each question to each participant at the URL it was given (a client made by the
// SDK 0.3's ClientFactory.createFromUrl, which reads <URL>/.well-known/agent-card.json), reports a
// working status per answer and completes with a "result" artifact {"answers": {"<role>": [...]}}.
// With --state_dir, every execution appends one JSON line to <state_dir>/executions.jsonl:
// {taskId, contextId, messageId, text} as the agent saw them (its own task id), so that a test
// can count how often a message was executed and see which task id the agent used.
//
// Usage: node js03_agent.mjs [--listen=127.0.0.1:0] [--name=js03] [--state_dir=DIR]
//          [--green_card=URL --tasks_dir=DIR] [--judge]
// Prints "js03_agent <name> listening on http://127.0.0.1:<port>" once it serves.
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import express from 'express';
import { DefaultRequestHandler, InMemoryTaskStore } from 'a2a-sdk-v03/server';
import { UserBuilder, agentCardHandler, jsonRpcHandler } from 'a2a-sdk-v03/server/express';
import { ClientFactory } from 'a2a-sdk-v03/client';

function flag(flagName, fallback) {
  const prefix = `--${flagName}=`;
  const arg = process.argv.slice(2).find((a) => a.startsWith(prefix));
  return arg === undefined ? fallback : arg.slice(prefix.length);
}

const listen = flag('listen', '127.0.0.1:0');
const name = flag('name', 'js03');
const stateDir = flag('state_dir', '');
const greenCard = flag('green_card', '');
const tasksDir = flag('tasks_dir', '');
const judge = process.argv.includes('--judge');
if (stateDir) fs.mkdirSync(stateDir, { recursive: true });

// Bound of one call to the green agent (a command may take a while).
const CALL_MS = 60000;

const textOf = (message) =>
  (message?.parts ?? []).find((p) => p.kind === 'text')?.text ?? '';
const now = () => new Date().toISOString();
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

function agentMessage(ctx, text) {
  return {
    kind: 'message',
    messageId: crypto.randomUUID(),
    role: 'agent',
    taskId: ctx.taskId,
    contextId: ctx.contextId,
    parts: [{ kind: 'text', text }],
  };
}

// A status update; `final` for the states that end a turn (0.3 ends the SDK's event stream on it).
function status(ctx, state, text) {
  const s = { state, timestamp: now() };
  if (text !== undefined) s.message = agentMessage(ctx, text);
  const final = ['completed', 'failed', 'canceled', 'rejected', 'input-required'].includes(state);
  return { kind: 'status-update', taskId: ctx.taskId, contextId: ctx.contextId, status: s, final };
}

function artifact(ctx, id, text) {
  return {
    kind: 'artifact-update',
    taskId: ctx.taskId,
    contextId: ctx.contextId,
    artifact: { artifactId: id, name: id, parts: [{ kind: 'text', text }] },
    lastChunk: true,
  };
}

function record(ctx, text) {
  const line = {
    taskId: ctx.taskId,
    contextId: ctx.contextId,
    messageId: ctx.userMessage.messageId,
    text,
  };
  console.log(`js03_agent ${name}: execute ${JSON.stringify(line)}`);
  if (stateDir) fs.appendFileSync(path.join(stateDir, 'executions.jsonl'), `${JSON.stringify(line)}\n`);
}

let green;
async function greenClient() {
  green ??= await new ClientFactory().createFromUrl(greenCard, '');
  return green;
}

// Plays the scripted policy of `taskId` against the green agent, in the evaluation's context.
async function playPurple(ctx, bus, taskId) {
  const script = JSON.parse(
    fs.readFileSync(path.join(tasksDir, path.basename(taskId), 'purple_script.json'), 'utf8'),
  );
  const client = await greenClient();
  let execSeq = 0;
  let answer = '';
  for (const action of script) {
    const execute = action.startsWith('execute:');
    if (execute) execSeq += 1;
    const result = await client.sendMessage(
      {
        message: {
          kind: 'message',
          messageId: crypto.randomUUID(),
          contextId: ctx.contextId,
          role: 'user',
          parts: [{ kind: 'text', text: action }],
          metadata: execute ? { exec_seq: execSeq } : {},
        },
      },
      { signal: AbortSignal.timeout(CALL_MS) },
    );
    answer = textOf(result?.kind === 'message' ? result : result?.status?.message);
    console.log(`js03_agent ${name}: ${action.slice(0, 60)} -> ${answer.slice(0, 80)}`);
  }
  bus.publish(artifact(ctx, 'answer', answer));
  bus.publish(status(ctx, 'completed', `submitted; green answered: ${answer}`));
}

// What a 0.3 answer says: a bare message's text, else the status message's, else the last
// artifact's.
function answerOf(result) {
  if (result?.kind === 'message') return textOf(result);
  const said = textOf(result?.status?.message);
  if (said) return said;
  const last = result?.artifacts?.[result.artifacts.length - 1];
  return textOf(last);
}

// Plays the judge of an assessment request: every question to every participant.
async function playJudge(ctx, bus, request) {
  const questions = request.config?.questions ?? ['hello'];
  const answers = {};
  for (const [role, url] of Object.entries(request.participants ?? {})) {
    const client = await new ClientFactory().createFromUrl(url);
    answers[role] = [];
    for (const question of questions) {
      const result = await client.sendMessage(
        {
          message: {
            kind: 'message',
            messageId: crypto.randomUUID(),
            role: 'user',
            parts: [{ kind: 'text', text: String(question) }],
          },
        },
        { signal: AbortSignal.timeout(CALL_MS) },
      );
      const answer = answerOf(result);
      answers[role].push(answer);
      bus.publish(status(ctx, 'working', `${role} answered: ${answer}`));
    }
  }
  bus.publish(artifact(ctx, 'result', JSON.stringify({ answers })));
  bus.publish(status(ctx, 'completed', 'assessment done'));
}

class Executor {
  // taskId -> function that ends a "hold" execution, and the task's context id.
  holds = new Map();
  contexts = new Map();

  async execute(ctx, bus) {
    try {
      await this.run(ctx, bus);
    } finally {
      bus.finished();
    }
  }

  async run(ctx, bus) {
    const text = textOf(ctx.userMessage);
    const command = text.split(/\s+/)[0];
    record(ctx, text);
    if (command === 'message') {
      bus.publish(agentMessage(ctx, 'a bare message from the js03 agent'));
      return;
    }
    // Every execution starts with a task event, the follow-up turns too.
    const task = ctx.task ?? {
      kind: 'task',
      id: ctx.taskId,
      contextId: ctx.contextId,
      status: { state: 'submitted', timestamp: now() },
      history: [ctx.userMessage],
    };
    this.contexts.set(ctx.taskId, ctx.contextId);
    bus.publish(task);
    bus.publish(status(ctx, 'working'));
    const evaluated = ctx.userMessage.metadata?.task_id;
    if (greenCard && typeof evaluated === 'string') {
      try {
        await playPurple(ctx, bus, evaluated);
      } catch (err) {
        bus.publish(status(ctx, 'failed', `purple: ${err?.message ?? err}`));
      }
      return;
    }
    if (judge && text.trimStart().startsWith('{')) {
      try {
        await playJudge(ctx, bus, JSON.parse(text));
      } catch (err) {
        bus.publish(status(ctx, 'failed', `judge: ${err?.message ?? err}`));
      }
      return;
    }
    if (command === 'hold') {
      await new Promise((resolve) => this.holds.set(ctx.taskId, resolve));
      return; // cancelTask published canceled
    }
    if (command === 'ask') {
      bus.publish(status(ctx, 'input-required', 'what should I echo?'));
      return;
    }
    if (text.startsWith('gate:')) {
      const gate = path.basename(text.slice('gate:'.length));
      console.log(`js03_agent ${name}: waiting at gate ${gate}`);
      while (!fs.existsSync(path.join(stateDir, `${gate}.open`))) await sleep(50);
      bus.publish(artifact(ctx, 'gate', gate));
      bus.publish(status(ctx, 'completed', `gate ${gate} passed`));
      return;
    }
    bus.publish(artifact(ctx, 'echo', text));
    bus.publish(status(ctx, 'completed', `js03 echo: ${text}`));
  }

  async cancelTask(taskId, bus) {
    const ctx = { taskId, contextId: this.contexts.get(taskId) ?? '' };
    console.log(`js03_agent ${name}: cancel ${taskId}`);
    bus.publish(status(ctx, 'canceled', 'canceled by request'));
    const release = this.holds.get(taskId);
    this.holds.delete(taskId);
    if (release) release();
  }
}

// A 0.3 card and nothing else: `url` is the JSON-RPC endpoint, set once the port is known.
const card = {
  name,
  description: 'Echo agent on the A2A JavaScript SDK 0.3 Express JSON-RPC server (coordinator interop tests)',
  protocolVersion: '0.3.0',
  version: '1.0.0',
  url: 'http://unset/',
  preferredTransport: 'JSONRPC',
  capabilities: { streaming: true, pushNotifications: false },
  defaultInputModes: ['text/plain'],
  defaultOutputModes: ['text/plain'],
  skills: [{ id: 'echo', name: 'echo', description: 'echoes text', tags: ['echo'] }],
};

const handler = new DefaultRequestHandler(card, new InMemoryTaskStore(), new Executor());
const app = express();
app.use('/.well-known/agent-card.json', agentCardHandler({ agentCardProvider: async () => card }));
app.use('/', jsonRpcHandler({ requestHandler: handler, userBuilder: UserBuilder.noAuthentication }));

const colon = listen.lastIndexOf(':');
const host = listen.slice(0, colon);
const server = app.listen(Number(listen.slice(colon + 1)), host, () => {
  const base = `http://${host}:${server.address().port}`;
  card.url = `${base}/`;
  console.log(`js03_agent ${name} listening on ${base}`);
});
server.on('error', (err) => {
  console.error(`js03_agent: cannot listen on ${listen}: ${err.message}`);
  process.exit(1);
});

function stop() {
  server.close(() => process.exit(0));
  server.closeAllConnections?.();
  setTimeout(() => process.exit(0), 2000).unref();
}
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
