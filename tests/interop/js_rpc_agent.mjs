// An A2A agent served by the official JavaScript SDK's Express server (@a2a-js/sdk/server/express):
// `jsonRpcHandler` (or `restHandler` with --binding=HTTP+JSON) over a DefaultRequestHandler and
// an in-memory task store, its card served by `agentCardHandler` at
// /.well-known/agent-card.json. The coordinator reaches it after
// `coordctl agent register <name> --card http://127.0.0.1:<port>/.well-known/agent-card.json`.
//
// It answers by the text of the message's first text part:
//   "hold"         works until canceled         "ask"      asks for input (INPUT_REQUIRED)
//   "message"      answers with a bare Message
//   "gate:<name>"  works until the file <--state_dir>/<name>.open exists, then completes with
//                  "gate <name> passed" (a test kills this process, or the coordinator, while
//                  the task waits there, and opens the gate once everything is back)
//   anything else: an "echo" artifact and COMPLETED with "js rpc echo: <text>".
// With --green_card, a message whose metadata names a "task_id" (the green agent's formatted
// task) is played as the agent under test: the task's purple_script.json under --tasks_dir is
// sent action by action to the green agent through the coordinator (the SDK's JSON-RPC client
// made from --green_card, the coordinator's per-agent card of the green agent), in the
// message's context, and the task completes with green's answer to "submit".
// With --judge it is a green agent as evaluation platforms run them: a message whose text is an
// assessment request {"participants": {"<role>": "<base URL>"}, "config": {"questions": [...]}}
// sends each question to each participant at the URL it was given (a client made by the SDK's
// ClientFactory.createFromUrl, which reads <URL>/.well-known/agent-card.json), reports a WORKING
// status per answer and completes with a "result" artifact {"answers": {"<role>": [...]}}.
// --versions lists the A2A versions of the card's one binding (default 1.0): with 0.3 among them
// (--versions=0.3, or --versions=1.0,0.3) the SDK's opt-in 0.3 compatibility layer is on
// (`legacyCompat: { enabled: true }` on jsonRpcHandler or restHandler and on agentCardHandler):
// the card lists an interface per version at the same URL, a card request without
// `A2A-Version: 1.0` gets the 0.3 card the layer makes from it (url, preferredTransport, and the
// card's supportedInterfaces embedded), and 0.3 requests (A2A-Version 0.3 or none) are
// translated by the layer for the same executor.
// With --state_dir, every execution appends one JSON line to <state_dir>/executions.jsonl:
// {taskId, contextId, messageId, text, version} as the agent saw them (its own task id; the
// A2A-Version the request came in, 0.3 when it had none), so that a test can count executions.
//
// Usage: node js_rpc_agent.mjs [--listen=127.0.0.1:0] [--name=jsrpc] [--binding=JSONRPC] [--judge]
//          [--versions=1.0] [--state_dir=DIR] [--green_card=URL --tasks_dir=DIR]
// Restart it on the port it printed (--listen=127.0.0.1:<port>) and its card URL stays valid.
// Prints "js_rpc_agent <name> listening on http://127.0.0.1:<port>" once it serves.
import fs from 'node:fs';
import path from 'node:path';
import express from 'express';
import { AgentCard, Message, Task, TaskArtifactUpdateEvent, TaskStatusUpdateEvent } from '@a2a-js/sdk';
import { AgentEvent, DefaultRequestHandler, InMemoryTaskStore } from '@a2a-js/sdk/server';
import { UserBuilder, agentCardHandler, jsonRpcHandler, restHandler } from '@a2a-js/sdk/server/express';
import { ClientFactory, JsonRpcTransportFactory } from '@a2a-js/sdk/client';

function flag(name, fallback) {
  const prefix = `--${name}=`;
  const arg = process.argv.slice(2).find((a) => a.startsWith(prefix));
  return arg === undefined ? fallback : arg.slice(prefix.length);
}

const listen = flag('listen', '127.0.0.1:0');
const name = flag('name', 'jsrpc');
const binding = flag('binding', 'JSONRPC');
const stateDir = flag('state_dir', '');
const greenCard = flag('green_card', '');
const tasksDir = flag('tasks_dir', '');
const judge = process.argv.includes('--judge');
const versions = flag('versions', '1.0').split(',');
const legacyCompat = { enabled: versions.includes('0.3') };
if (stateDir) fs.mkdirSync(stateDir, { recursive: true });
if (versions.some((v) => v !== '1.0' && v !== '0.3')) {
  console.error(`js_rpc_agent: --versions lists 1.0 and/or 0.3, not ${versions.join(',')}`);
  process.exit(2);
}
if (binding !== 'JSONRPC' && binding !== 'HTTP+JSON') {
  console.error(`js_rpc_agent: --binding must be JSONRPC or HTTP+JSON, not ${binding}`);
  process.exit(2);
}

// Bound of one call to the green agent (a command may take a while).
const CALL_MS = 60000;

function textOf(message) {
  for (const part of message?.parts ?? []) {
    if (part.content?.$case === 'text') return part.content.value;
  }
  return '';
}

function now() {
  return new Date().toISOString();
}

let counter = 0;
function messageId(prefix) {
  counter += 1;
  return `${prefix}-${process.pid}-${Date.now()}-${counter}`;
}

function agentMessage(ctx, text) {
  return Message.fromJSON({
    messageId: messageId(ctx.taskId),
    contextId: ctx.contextId,
    taskId: ctx.taskId,
    role: 'ROLE_AGENT',
    parts: [{ text }],
  });
}

function status(ctx, state, text) {
  const s = { state, timestamp: now() };
  if (text !== undefined) s.message = Message.toJSON(agentMessage(ctx, text));
  return AgentEvent.statusUpdate(
    TaskStatusUpdateEvent.fromJSON({ taskId: ctx.taskId, contextId: ctx.contextId, status: s }),
  );
}

function artifact(ctx, id, text) {
  return AgentEvent.artifactUpdate(
    TaskArtifactUpdateEvent.fromJSON({
      taskId: ctx.taskId,
      contextId: ctx.contextId,
      artifact: { artifactId: id, name: id, parts: [{ text }] },
      lastChunk: true,
    }),
  );
}

function record(ctx, text) {
  if (!stateDir) return;
  const line = {
    taskId: ctx.taskId,
    contextId: ctx.contextId,
    messageId: ctx.userMessage.messageId,
    text,
    version: ctx.context?.requestedVersion,
  };
  fs.appendFileSync(path.join(stateDir, 'executions.jsonl'), `${JSON.stringify(line)}\n`);
}

function sleep(ms) {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

let green;
async function greenClient() {
  green ??= await new ClientFactory({ transports: [new JsonRpcTransportFactory()] }).createFromUrl(
    greenCard,
    '',
  );
  return green;
}

// The green agent's answer (a Task) to one action, sent in the evaluation's context.
async function toGreen(ctx, text, metadata) {
  const client = await greenClient();
  const result = await client.sendMessage(
    {
      message: Message.fromJSON({
        messageId: messageId('purple'),
        contextId: ctx.contextId,
        role: 'ROLE_USER',
        parts: [{ text }],
        metadata,
      }),
    },
    { signal: AbortSignal.timeout(CALL_MS) },
  );
  return result;
}

// Plays the scripted policy of `taskId` against the green agent.
async function playPurple(ctx, bus, taskId) {
  const script = JSON.parse(
    fs.readFileSync(path.join(tasksDir, path.basename(taskId), 'purple_script.json'), 'utf8'),
  );
  let execSeq = 0;
  let answer = '';
  for (const action of script) {
    const execute = action.startsWith('execute:');
    if (execute) execSeq += 1;
    const result = await toGreen(ctx, action, execute ? { exec_seq: execSeq } : {});
    answer = textOf(result?.status?.message);
    console.log(`js_rpc_agent ${name}: ${action.slice(0, 60)} -> ${answer.slice(0, 80)}`);
  }
  bus.publish(artifact(ctx, 'answer', answer));
  bus.publish(status(ctx, 'TASK_STATE_COMPLETED', `submitted; green answered: ${answer}`));
}

// The text of an agent's answer: its message, or its task's status message, or its last
// artifact's text.
function answerOf(result) {
  if (result?.parts) return textOf(result);
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
    const client = await new ClientFactory({ transports: [new JsonRpcTransportFactory()] }).createFromUrl(url);
    answers[role] = [];
    for (const question of questions) {
      const result = await client.sendMessage(
        {
          message: Message.fromJSON({
            messageId: messageId('judge'),
            role: 'ROLE_USER',
            parts: [{ text: String(question) }],
          }),
        },
        { signal: AbortSignal.timeout(CALL_MS) },
      );
      const answer = answerOf(result);
      answers[role].push(answer);
      bus.publish(status(ctx, 'TASK_STATE_WORKING', `${role} answered: ${answer}`));
    }
  }
  bus.publish(artifact(ctx, 'result', JSON.stringify({ answers })));
  bus.publish(status(ctx, 'TASK_STATE_COMPLETED', 'assessment done'));
}

class Executor {
  // taskId -> function that ends a "hold" execution, and the task's context id.
  holds = new Map();
  contexts = new Map();

  async execute(ctx, bus) {
    const text = textOf(ctx.userMessage);
    record(ctx, text);
    if (text === 'message') {
      bus.publish(AgentEvent.message(agentMessage(ctx, 'a bare message from the js rpc agent')));
      return;
    }
    // Every execution starts with a task event, the follow-up turns too.
    const task =
      ctx.task ??
      Task.fromJSON({
        id: ctx.taskId,
        contextId: ctx.contextId,
        status: { state: 'TASK_STATE_SUBMITTED', timestamp: now() },
        history: [Message.toJSON(ctx.userMessage)],
      });
    this.contexts.set(ctx.taskId, ctx.contextId);
    bus.publish(AgentEvent.task(task));
    bus.publish(status(ctx, 'TASK_STATE_WORKING'));
    const evaluated = ctx.userMessage.metadata?.task_id;
    if (greenCard && typeof evaluated === 'string') {
      try {
        await playPurple(ctx, bus, evaluated);
      } catch (err) {
        bus.publish(status(ctx, 'TASK_STATE_FAILED', `purple: ${err?.message ?? err}`));
      }
      return;
    }
    if (judge && text.trimStart().startsWith('{')) {
      try {
        await playJudge(ctx, bus, JSON.parse(text));
      } catch (err) {
        bus.publish(status(ctx, 'TASK_STATE_FAILED', `judge: ${err?.message ?? err}`));
      }
      return;
    }
    if (text === 'hold') {
      await new Promise((resolve) => this.holds.set(ctx.taskId, resolve));
      return; // cancelTask published CANCELED
    }
    if (text === 'ask') {
      bus.publish(status(ctx, 'TASK_STATE_INPUT_REQUIRED', 'what should I echo?'));
      return;
    }
    if (text.startsWith('gate:')) {
      const gate = path.basename(text.slice('gate:'.length));
      console.log(`js_rpc_agent ${name}: waiting at gate ${gate}`);
      while (!fs.existsSync(path.join(stateDir, `${gate}.open`))) await sleep(50);
      bus.publish(artifact(ctx, 'gate', gate));
      bus.publish(status(ctx, 'TASK_STATE_COMPLETED', `gate ${gate} passed`));
      console.log(`js_rpc_agent ${name}: passed gate ${gate} (task ${ctx.taskId})`);
      return;
    }
    bus.publish(artifact(ctx, 'echo', text));
    bus.publish(status(ctx, 'TASK_STATE_COMPLETED', `js rpc echo: ${text}`));
  }

  async cancelTask(taskId, bus) {
    const ctx = { taskId, contextId: this.contexts.get(taskId) ?? '' };
    bus.publish(status(ctx, 'TASK_STATE_CANCELED', 'canceled by request'));
    const release = this.holds.get(taskId);
    this.holds.delete(taskId);
    if (release) release();
  }
}

const card = AgentCard.fromJSON({
  name,
  description: `Echo agent on the A2A JavaScript SDK's Express ${binding} server (coordinator interop tests)`,
  version: '1.0.0',
  // The server checks a request's A2A-Version against the versions listed for its binding.
  supportedInterfaces: versions.map((protocolVersion) => ({
    url: 'http://unset',
    protocolBinding: binding,
    protocolVersion,
  })),
  capabilities: { streaming: true },
  defaultInputModes: ['text/plain'],
  defaultOutputModes: ['text/plain'],
  skills: [{ id: 'echo', name: 'echo', description: 'echoes text', tags: ['echo'] }],
});

const handler = new DefaultRequestHandler(card, new InMemoryTaskStore(), new Executor());
const app = express();
app.use(
  '/.well-known/agent-card.json',
  agentCardHandler({
    agentCardProvider: async () => AgentCard.toJSON(card),
    cache: { maxAge: 0 },
    legacyCompat,
  }),
);
const options = { requestHandler: handler, userBuilder: UserBuilder.noAuthentication, legacyCompat };
app.use('/', binding === 'JSONRPC' ? jsonRpcHandler(options) : restHandler(options));

const colon = listen.lastIndexOf(':');
const host = listen.slice(0, colon);
const server = app.listen(Number(listen.slice(colon + 1)), host, () => {
  const base = `http://${host}:${server.address().port}`;
  for (const iface of card.supportedInterfaces) iface.url = binding === 'JSONRPC' ? `${base}/` : base;
  console.log(`js_rpc_agent ${name} listening on ${base}`);
});
server.on('error', (err) => {
  console.error(`js_rpc_agent: cannot listen on ${listen}: ${err.message}`);
  process.exit(1);
});

function stop() {
  server.close(() => process.exit(0));
  server.closeAllConnections?.();
  setTimeout(() => process.exit(0), 2000).unref();
}
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
