// An A2A agent built only from the official JavaScript SDK (@a2a-js/sdk): its gRPC server
// (`grpcService` from @a2a-js/sdk/server/grpc) over a DefaultRequestHandler with an in-memory
// task store, or with --store=postgres://... the SDK's own DatabaseTaskStore
// (@a2a-js/sdk/server/database, kysely + pg) on that database, whose `tasks` table must exist
// (`a2a-db upgrade --store tasks --url ...`; bench/run.sh measures it as the durable peer).
// run.sh registers it behind the coordinator, so the coordinator's C++ gateway (a gRPC client
// we wrote) talks to a server we did not write.
//
// It answers by the text of the message's first text part (like agent_runtime/echo_agent.h):
//   "hold"     works until canceled          "ask"   asks for input (INPUT_REQUIRED)
//   "message"  answers with a bare Message (no task events)
//   anything else: an "echo" artifact and COMPLETED with "js echo: <text>".
//
// Usage: node js_agent.mjs [--listen=127.0.0.1:0] [--name=jsecho] [--store=memory|postgres://URL]
// Prints "js_agent <name> listening on 127.0.0.1:<port>" on stdout once it serves.
import * as grpc from '@grpc/grpc-js';
import { AgentCard, Message, Task, TaskStatusUpdateEvent, TaskArtifactUpdateEvent } from '@a2a-js/sdk';
import { AgentEvent, DefaultRequestHandler, InMemoryTaskStore } from '@a2a-js/sdk/server';
import { A2AService, UserBuilder, grpcService } from '@a2a-js/sdk/server/grpc';

function flag(name, fallback) {
  const prefix = `--${name}=`;
  const arg = process.argv.slice(2).find((a) => a.startsWith(prefix));
  return arg === undefined ? fallback : arg.slice(prefix.length);
}

const listen = flag('listen', '127.0.0.1:0');
const name = flag('name', 'jsecho');
// Where tasks live: `memory` (the default) or a postgres:// / postgresql:// URL.
const storeFlag = flag('store', 'memory');

function textOf(message) {
  for (const part of message?.parts ?? []) {
    if (part.content?.$case === 'text') return part.content.value;
  }
  return '';
}

function now() {
  return new Date().toISOString();
}

function agentMessage(ctx, text) {
  return Message.fromJSON({
    messageId: `${ctx.taskId}-${Math.random().toString(16).slice(2)}`,
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

class EchoExecutor {
  // taskId -> function that ends a "hold" execution, and the task's context id.
  holds = new Map();
  contexts = new Map();

  async execute(ctx, bus) {
    const text = textOf(ctx.userMessage);
    if (text === 'message') {
      bus.publish(AgentEvent.message(agentMessage(ctx, 'a bare message from the js agent')));
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
    if (text === 'hold') {
      await new Promise((resolve) => this.holds.set(ctx.taskId, resolve));
      return; // cancelTask published CANCELED
    }
    if (text === 'ask') {
      bus.publish(status(ctx, 'TASK_STATE_INPUT_REQUIRED', 'what should I echo?'));
      return;
    }
    bus.publish(
      AgentEvent.artifactUpdate(
        TaskArtifactUpdateEvent.fromJSON({
          taskId: ctx.taskId,
          contextId: ctx.contextId,
          artifact: {
            artifactId: 'echo',
            name: 'echo',
            parts: [{ text }],
            // What the SDK server saw of the caller (the coordinator): its A2A-Version header.
            metadata: { requestedVersion: ctx.context?.requestedVersion ?? null },
          },
          lastChunk: true,
        }),
      ),
    );
    bus.publish(status(ctx, 'TASK_STATE_COMPLETED', `js echo: ${text}`));
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
  description: 'Echo agent on the official A2A JavaScript SDK (coordinator interop tests)',
  version: '1.0.0',
  // The gRPC server checks a request's A2A-Version against the versions listed here.
  supportedInterfaces: [{ url: listen, protocolBinding: 'GRPC', protocolVersion: '1.0' }],
  capabilities: { streaming: true },
  defaultInputModes: ['text/plain'],
  defaultOutputModes: ['text/plain'],
  skills: [{ id: 'echo', name: 'echo', description: 'echoes text', tags: ['echo'] }],
});

// The SDK's database store on a pg pool (node-postgres' default of 10 connections); the driver
// is loaded only when asked for, so the in-memory agent needs neither kysely nor pg.
async function taskStore() {
  if (storeFlag === 'memory') return { store: new InMemoryTaskStore(), close: async () => {} };
  if (!/^postgres(ql)?:\/\//.test(storeFlag)) {
    console.error(`js_agent: --store takes memory or a postgres:// URL, not ${storeFlag}`);
    process.exit(2);
  }
  const [{ Kysely, PostgresDialect }, pg, { DatabaseTaskStore }] = await Promise.all([
    import('kysely'),
    import('pg'),
    import('@a2a-js/sdk/server/database'),
  ]);
  const db = new Kysely({
    dialect: new PostgresDialect({ pool: new pg.default.Pool({ connectionString: storeFlag }) }),
  });
  return { store: new DatabaseTaskStore(db), close: () => db.destroy() };
}

const { store, close: closeStore } = await taskStore();
const handler = new DefaultRequestHandler(card, store, new EchoExecutor());
const server = new grpc.Server();
server.addService(
  A2AService,
  grpcService({ requestHandler: handler, userBuilder: UserBuilder.noAuthentication }),
);
server.bindAsync(listen, grpc.ServerCredentials.createInsecure(), (err, port) => {
  if (err) {
    console.error(`js_agent: cannot listen on ${listen}: ${err.message}`);
    process.exit(1);
  }
  const address = `${listen.slice(0, listen.lastIndexOf(':'))}:${port}`;
  card.supportedInterfaces[0].url = address;
  console.log(`js_agent ${name} listening on ${address}`);
});

function stop() {
  server.tryShutdown(() => closeStore().finally(() => process.exit(0)));
  setTimeout(() => process.exit(0), 2000).unref();
}
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
