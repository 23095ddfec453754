// Shared helpers of the interop tests: clients of the official A2A JavaScript SDK pointed at the
// coordinator that run.sh started. Environment (set by run.sh):
//   COORD_ADDR   the coordinator's gRPC address, 127.0.0.1:<port>
//   COORD_HTTP   base URL of its agent card, http://127.0.0.1:<port>
import assert from 'node:assert/strict';
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
import { AgentCardResolver, ClientFactory, ClientFactoryOptions } from '@a2a-js/sdk/client';
import { GrpcTransportFactory } from '@a2a-js/sdk/client/grpc';

export { TaskState };

export const COORD_ADDR = required('COORD_ADDR');
export const COORD_HTTP = required('COORD_HTTP');

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

export function grpcTransportFactory() {
  return new GrpcTransportFactory({ grpcCallOptions: { interceptors: [recorder] } });
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
export async function coordinatorCard() {
  return AgentCardResolver.default.resolve(COORD_HTTP);
}

// An SDK client for the agent `tenant` behind the coordinator, made from the coordinator's card:
// the card is narrowed to that agent's interface and the SDK does the rest (it sets the
// interface's tenant on every request).
export async function clientFor(tenant) {
  const card = await coordinatorCard();
  const iface = (card.supportedInterfaces ?? []).find((i) => i.tenant === tenant);
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
