// Shared helpers of the interop tests: clients of the official A2A JavaScript SDK pointed at the
// coordinator that run.sh started, and processes a test starts itself. Environment (set by
// run.sh):
//   COORD_ADDR     the coordinator's gRPC address, 127.0.0.1:<port>
//   COORD_HTTP     its HTTP address (cards, JSON-RPC, HTTP+JSON), http://127.0.0.1:<port>
//   COORD_BIN_DIR  the built binaries (coordinator, coordctl, green_agent, ...)
//   INTEROP_WORK   run.sh's scratch dir: a test's logs go there, and pids/ lists the processes
//                  a test started, which run.sh stops (by PID) should the test not
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { InterceptingCall } from '@grpc/grpc-js';
import {
  Message,
  SendMessageRequest,
  GetTaskRequest,
  ListTasksRequest,
  CancelTaskRequest,
  SubscribeToTaskRequest,
  TaskState,
} from '@a2a-js/sdk';
import {
  AgentCardResolver,
  ClientFactory,
  ClientFactoryOptions,
  DefaultAgentCardResolver,
  JsonRpcTransportFactory,
  RestTransportFactory,
} from '@a2a-js/sdk/client';
import { GrpcTransportFactory } from '@a2a-js/sdk/client/grpc';
import { JsonRpcTransport as JsonRpcTransportV03 } from 'a2a-sdk-v03/client';

export { TaskState };

export const COORD_ADDR = required('COORD_ADDR');
export const COORD_HTTP = required('COORD_HTTP');
export const COORD_BIN_DIR = required('COORD_BIN_DIR');
export const INTEROP_WORK = required('INTEROP_WORK');
export const HERE = path.dirname(fileURLToPath(import.meta.url));

// Bound of any one wait on the coordinator (a stream, a blocking send).
export const WAIT_MS = 20000;

function required(name) {
  const value = process.env[name];
  if (!value) {
    console.error(`${name} is not set: run these tests through tests/interop/run.sh`);
    process.exit(2);
  }
  return value;
}

// Every gRPC call the SDK makes, as the coordinator receives it: method path and metadata.
export const calls = [];

// A grpc-js client interceptor that records the method path and the A2A-Version metadata.
function recorder(options, nextCall) {
  return new InterceptingCall(nextCall(options), {
    start(metadata, listener, next) {
      calls.push({
        path: options.method_definition.path,
        version: metadata.get('a2a-version').map(String),
      });
      next(metadata, listener);
    },
  });
}

// `options`: more GrpcTransportFactory options (legacyCompat).
export function grpcTransportFactory(options = {}) {
  return new GrpcTransportFactory({ grpcCallOptions: { interceptors: [recorder] }, ...options });
}

function factory() {
  return new ClientFactory(
    ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
      transports: [grpcTransportFactory()],
      preferredTransports: ['GRPC'],
    }),
  );
}

// The coordinator's agent card, fetched the way the SDK does (AgentCardResolver).
export async function coordinatorCard(http = COORD_HTTP) {
  return AgentCardResolver.default.resolve(http);
}

// An SDK client for the agent `tenant` behind the coordinator, made from the coordinator's card:
// the card is narrowed to that agent's interface and the SDK does the rest (it sets the
// interface's tenant on every request).
export async function clientFor(tenant, http = COORD_HTTP) {
  const card = await coordinatorCard(http);
  const iface = (card.supportedInterfaces ?? []).find(
    (i) => i.tenant === tenant && i.protocolBinding === 'GRPC',
  );
  assert.ok(iface, `the coordinator's card lists no interface for ${tenant}`);
  return factory().createFromAgentCard({ ...card, supportedInterfaces: [iface] });
}

// An SDK client from the card URL alone (discovery, no narrowing).
export async function clientFromUrl() {
  return factory().createFromUrl(COORD_HTTP);
}

// The SDK's bare gRPC transport for the coordinator (no Client around it: no default tenant, no
// A2A-Version header unless the caller passes one).
export async function rawTransport() {
  return grpcTransportFactory().create(COORD_ADDR, await coordinatorCard());
}

let counter = 0;
export function userMessage(text, fields = {}) {
  counter += 1;
  return Message.fromJSON({
    messageId: `interop-${process.pid}-${Date.now()}-${counter}`,
    role: 'ROLE_USER',
    parts: [{ text }],
    ...fields,
  });
}

export function sendRequest(text, { message = {}, configuration } = {}) {
  const request = SendMessageRequest.fromJSON({ configuration });
  request.message = userMessage(text, message);
  return request;
}

export const getTaskRequest = (json) => GetTaskRequest.fromJSON(json);
export const listTasksRequest = (json) => ListTasksRequest.fromJSON(json);
export const cancelTaskRequest = (json) => CancelTaskRequest.fromJSON(json);
export const subscribeRequest = (json) => SubscribeToTaskRequest.fromJSON(json);

export function textOf(message) {
  for (const part of message?.parts ?? []) {
    if (part.content?.$case === 'text') return part.content.value;
  }
  return undefined;
}

export function stateName(state) {
  return TaskState[state] ?? String(state);
}

export function assertState(task, state, what = 'task') {
  assert.equal(stateName(task?.status?.state), stateName(state), `${what} state`);
}

// A Task from sendMessage (which may also answer with a Message).
export function asTask(result) {
  assert.ok(result && 'status' in result && 'id' in result, `expected a Task, got ${JSON.stringify(result)}`);
  return result;
}

// Options that bound a call: its signal aborts after WAIT_MS.
export function bounded() {
  return { signal: AbortSignal.timeout(WAIT_MS) };
}

// Reads a stream of StreamResponse to its end (bounded), calling `onEvent` for each.
export async function collect(stream, onEvent = async () => {}) {
  const events = [];
  for await (const event of stream) {
    events.push(event);
    await onEvent(event);
  }
  return events;
}

// The task state an event carries, if any.
export function eventState(event) {
  const p = event.payload;
  if (p?.$case === 'task') return p.value.status?.state;
  if (p?.$case === 'statusUpdate') return p.value.status?.state;
  return undefined;
}

export function eventCases(events) {
  return events.map((e) => e.payload?.$case);
}

// Every recorded call went to the lf.a2a.v1 service with A2A-Version 1.0 (calls where the test
// set another version itself are skipped by `except`).
export function assertCallsSpokeV1(except = () => false) {
  assert.ok(calls.length > 0, 'no gRPC calls were recorded');
  for (const call of calls) {
    assert.match(call.path, /^\/lf\.a2a\.v1\.A2AService\/[A-Za-z]+$/);
    if (except(call)) continue;
    assert.deepEqual(call.version, ['1.0'], `a2a-version of ${call.path}`);
  }
}

// --- The coordinator's per-agent HTTP endpoints (JSON-RPC and HTTP+JSON bindings).

// The card of agent `name` behind a coordinator: it lists the JSONRPC and HTTP+JSON interfaces
// at http://<http>/agents/<name>.
export function agentCardUrl(name, http = COORD_HTTP) {
  return `${http}/agents/${name}/.well-known/agent-card.json`;
}

// Every HTTP request an SDK client made through `recordingFetch`: method, URL, A2A-Version, and
// the JSON-RPC method when the body is a JSON-RPC request.
export const httpCalls = [];

function recordingFetch(url, init = {}) {
  const headers = new Headers(init.headers);
  let rpc;
  try {
    rpc = typeof init.body === 'string' ? JSON.parse(init.body).method : undefined;
  } catch {
    rpc = undefined;
  }
  httpCalls.push({ method: init.method ?? 'GET', url: String(url), version: headers.get('A2A-Version'), rpc });
  return fetch(url, init);
}

// `options`: more transport factory options (legacyCompat).
const transportFactories = {
  JSONRPC: (options) => new JsonRpcTransportFactory({ fetchImpl: recordingFetch, ...options }),
  'HTTP+JSON': (options) => new RestTransportFactory({ fetchImpl: recordingFetch, ...options }),
  GRPC: (options) => grpcTransportFactory(options),
};

// An SDK client made from the card at `cardUrl` that can only speak `binding` ("JSONRPC",
// "HTTP+JSON" or "GRPC"): the SDK picks that interface from the card, or fails.
export async function bindingClient(cardUrl, binding) {
  const factory = new ClientFactory({ transports: [transportFactories[binding]()] });
  return factory.createFromUrl(cardUrl, '');
}

// The SDK 1.3 client with its opt-in A2A 0.3 compatibility layer on (`legacyCompat: { enabled:
// true }` on the card resolver and the transport factory), made from the card at `cardUrl`, that
// can only speak `binding`. Without `version` the SDK picks the interface; with `version` ("0.3")
// the card is first narrowed to that version's interfaces: given one binding in both versions the
// SDK always takes the 1.0 one (ClientFactory keeps the 1.0 interface of each binding, and the
// factories' pickMatchingInterface the 1.0 one at a URL), so narrowing is how a client is made
// to speak 0.3. HTTP calls are recorded in httpCalls, gRPC calls in calls.
export async function compatClient(cardUrl, binding, version) {
  const legacyCompat = { enabled: true };
  const resolver = new DefaultAgentCardResolver({ legacyCompat, fetchImpl: recordingFetch });
  const factory = new ClientFactory({
    transports: [transportFactories[binding]({ legacyCompat })],
    cardResolver: resolver,
  });
  if (version === undefined) return factory.createFromUrl(cardUrl, '');
  const card = await resolver.resolve(cardUrl, '');
  const interfaces = (card.supportedInterfaces ?? []).filter((i) => i.protocolVersion === version);
  assert.ok(
    interfaces.some((i) => i.protocolBinding === binding),
    `the card at ${cardUrl} lists no ${binding} ${version} interface: ${JSON.stringify(card.supportedInterfaces)}`,
  );
  return factory.createFromAgentCard({ ...card, supportedInterfaces: interfaces });
}

// The card at `cardUrl`, as the SDK reads it.
export async function fetchCard(cardUrl) {
  return AgentCardResolver.default.resolve(cardUrl, '');
}

// --- The SDK 0.3 (a2a-sdk-v03) JSON-RPC client on the coordinator's 0.3 binding.

// The SDK 0.3's JSON-RPC transport to agent `name` behind a coordinator (its base URL, where the
// coordinator serves JSON-RPC 0.3 beside 1.0).
export function v03Client(name, http = COORD_HTTP) {
  return new JsonRpcTransportV03({ endpoint: `${http}/agents/${name}` });
}

// A 0.3 user message (0.3 JSON: kind, role "user", parts with kind).
export function v03Message(text, fields = {}) {
  counter += 1;
  return {
    kind: 'message',
    messageId: `interop03-${process.pid}-${Date.now()}-${counter}`,
    role: 'user',
    parts: [{ kind: 'text', text }],
    ...fields,
  };
}

// The text parts of a 0.3 message or artifact, joined.
export function v03Text(message) {
  return (message?.parts ?? [])
    .filter((p) => p.kind === 'text')
    .map((p) => p.text)
    .join('');
}

// The task state a 0.3 event (task or status-update) carries, if any.
export function v03State(event) {
  return event?.kind === 'task' || event?.kind === 'status-update' ? event.status?.state : undefined;
}

// --- Processes a test starts itself.

const BOUND_MS = 30000;

function pidFile(pid) {
  return path.join(INTEROP_WORK, 'pids', String(pid));
}

// Starts `command args`, appending its output to INTEROP_WORK/<name>.log, and waits (bounded)
// until its output so far matches `ready` (a RegExp, or a function of the output that returns
// a truthy match). Resolves to { child, match, log }.
export function startProcess(name, command, args, ready) {
  fs.mkdirSync(path.join(INTEROP_WORK, 'pids'), { recursive: true });
  const log = path.join(INTEROP_WORK, `${name}.log`);
  const out = fs.openSync(log, 'a');
  fs.writeSync(out, `----- ${command} ${args.join(' ')}\n`);
  const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  fs.writeFileSync(pidFile(child.pid), command);
  child.exited = new Promise((resolve) =>
    child.on('exit', (code, signal) => {
      fs.rmSync(pidFile(child.pid), { force: true });
      resolve({ code, signal });
    }),
  );
  return new Promise((resolve, reject) => {
    let seen = '';
    let done = false;
    const timer = setTimeout(() => finish(new Error(`${name} was not ready after ${BOUND_MS} ms`)), BOUND_MS);
    function finish(err, match) {
      if (done) return;
      done = true;
      clearTimeout(timer);
      if (err) {
        child.kill('SIGKILL');
        reject(err);
      } else {
        resolve({ child, match, log });
      }
    }
    const onData = (chunk) => {
      fs.writeSync(out, chunk);
      if (done) return;
      seen += chunk.toString();
      const match = typeof ready === 'function' ? ready(seen) : seen.match(ready);
      if (match) finish(undefined, match);
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    child.on('exit', (code, signal) => {
      finish(new Error(`${name} exited (${code ?? signal}) before it was ready; see ${log}`));
      fs.closeSync(out);
    });
  });
}

// Sends `signal` to a process started by startProcess and waits until it has exited.
export async function stopProcess(proc, signal = 'SIGTERM') {
  if (!proc || proc.child.exitCode !== null || proc.child.signalCode !== null) return;
  proc.child.kill(signal);
  const timer = setTimeout(() => proc.child.kill('SIGKILL'), 5000);
  await proc.child.exited;
  clearTimeout(timer);
}

// A coordinator of the test's own on `dataDir`, on the given ports (0: any). Resolves to
// { proc, addr, http, grpcPort, httpPort }.
export async function startCoordinator(name, dataDir, { grpcPort = 0, httpPort = 0 } = {}) {
  const proc = await startProcess(
    name,
    path.join(COORD_BIN_DIR, 'coordinator'),
    [
      `--listen=127.0.0.1:${grpcPort}`,
      `--data_dir=${dataDir}`,
      `--http_listen=127.0.0.1:${httpPort}`,
      '--a2a_retry_initial_backoff=50ms',
      '--a2a_retry_max_backoff=500ms',
      '--a2a_delivery_max_attempts=1000',
    ],
    (seen) => {
      const grpc = seen.match(/listening on (127\.0\.0\.1:\d+)/);
      const http = seen.match(/(http:\/\/127\.0\.0\.1:\d+)/);
      return grpc && http && [grpc[1], http[1]];
    },
  );
  const [addr, http] = proc.match;
  return { proc, addr, http, grpcPort: Number(addr.split(':')[1]), httpPort: Number(http.split(':')[2]) };
}

// Starts the agent script `script` of this folder with `args`. Resolves to
// { proc, base, port, card }.
async function startJsAgent(script, name, args) {
  const proc = await startProcess(
    name,
    process.execPath,
    [...process.execArgv, path.join(HERE, script), ...args],
    /listening on (http:\/\/127\.0\.0\.1:(\d+))/,
  );
  const base = proc.match[1];
  return { proc, base, port: Number(proc.match[2]), card: `${base}/.well-known/agent-card.json` };
}

// js_rpc_agent.mjs (SDK 1.x) and js03_agent.mjs (SDK 0.3), each with `args`.
export const startJsRpcAgent = (name, args) => startJsAgent('js_rpc_agent.mjs', name, args);
export const startJs03Agent = (name, args) => startJsAgent('js03_agent.mjs', name, args);

// Runs coordctl against `target`; resolves to { code, stdout, stderr } (bounded).
export function coordctl(args, target = COORD_ADDR) {
  return new Promise((resolve) => {
    execFile(
      path.join(COORD_BIN_DIR, 'coordctl'),
      [`--target=${target}`, '--timeout=10s', ...args],
      { timeout: BOUND_MS },
      (err, stdout, stderr) => resolve({ code: err ? err.code ?? 1 : 0, stdout, stderr }),
    );
  });
}

// Polls `check` (async, truthy when done) until it holds; fails after WAIT_MS with `what`.
export async function waitUntil(what, check) {
  const deadline = Date.now() + WAIT_MS;
  let last;
  for (;;) {
    try {
      const value = await check();
      if (value) return value;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline) {
      throw new Error(`timed out waiting for ${what}${last ? `: ${last.message ?? last}` : ''}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

// The JSON objects of a JSON Lines file, in order ([] when the file does not exist yet).
export function readJsonLines(file) {
  if (!fs.existsSync(file)) return [];
  return jsonLines(fs.readFileSync(file, 'utf8'));
}

function jsonLines(text) {
  return text
    .split('\n')
    .filter((l) => l.trim())
    .map((l) => JSON.parse(l));
}

// Every agent the coordinator has registered, as `coordctl agent list --json` prints them.
export async function registeredAgents() {
  const listed = await coordctl(['agent', 'list', '--json']);
  assert.equal(listed.code, 0, listed.stderr);
  return jsonLines(listed.stdout);
}

// An assessment request to the green agent (docs/evaluations.md): one data part
// {participants, config}.
export function assessmentRequest(participants, config) {
  return sendRequest('', { message: { parts: [{ data: { participants, config } }] } });
}
