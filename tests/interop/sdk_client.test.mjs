// The official A2A JavaScript SDK's gRPC client against the coordinator, reaching the C++
// echo_agent (agent_runtime/echo_agent.h, tenant "echo") behind it: discovery from the agent
// card, blocking and streaming sends, multi-turn, get, list, subscribe, cancel, and the A2A
// errors as the SDK decodes them (google.rpc.ErrorInfo in grpc-status-details-bin).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import {
  DeleteTaskPushNotificationConfigRequest,
  GetExtendedAgentCardRequest,
  GetTaskPushNotificationConfigRequest,
  ListTaskPushNotificationConfigsRequest,
  StreamResponse,
  TaskPushNotificationConfig,
} from '@a2a-js/sdk';
import {
  TaskNotCancelableError,
  TaskNotFoundError,
  UnsupportedOperationError,
  VersionNotSupportedError,
  A2AError,
} from '@a2a-js/sdk/errors';
import {
  COORD_ADDR,
  TaskState,
  asTask,
  assertCallsSpokeV1,
  assertState,
  WAIT_MS,
  bounded,
  calls,
  cancelTaskRequest,
  clientFor,
  clientFromUrl,
  collect,
  coordinatorCard,
  eventCases,
  eventState,
  getTaskRequest,
  listTasksRequest,
  rawTransport,
  sendRequest,
  subscribeRequest,
  textOf,
} from './lib.mjs';

const TENANT = 'echo';
// The agents run.sh registers.
const REGISTERED = ['echo', 'green', 'jsecho', 'jsrest', 'jsrpc'];

test('the coordinator card lists a GRPC 1.0 interface per registered agent', async () => {
  const card = await coordinatorCard();
  assert.equal(card.capabilities?.streaming, true);
  const grpc = (card.supportedInterfaces ?? []).filter(
    (i) => i.protocolBinding === 'GRPC' && i.protocolVersion === '1.0',
  );
  const tenants = grpc.map((i) => i.tenant).sort();
  // run.sh registers these (the JS SDK's Express agents by card URL); other files may add more.
  for (const agent of REGISTERED) assert.ok(tenants.includes(agent), `${agent} in ${tenants}`);
  for (const iface of grpc) {
    assert.equal(iface.url, COORD_ADDR);
    assert.equal(iface.protocolVersion, '1.0');
  }
});

test('a client created from the card URL alone (ClientFactory.createFromUrl) sends', async () => {
  const client = await clientFromUrl();
  assert.equal(client.protocolVersion, '1.0');
  const task = asTask(await client.sendMessage(sendRequest('discovered'), bounded()));
  assertState(task, TaskState.TASK_STATE_COMPLETED);
  // The SDK took the last GRPC interface of the card (agents are listed by name: jsrpc); every
  // agent run.sh registers but green echoes the text as an artifact.
  assert.equal(textOf(task.artifacts[0]), 'discovered');
});

test('blocking send, then get and list the task', async () => {
  const client = await clientFor(TENANT);
  const task = asTask(await client.sendMessage(sendRequest('hello interop'), bounded()));
  assertState(task, TaskState.TASK_STATE_COMPLETED);
  assert.ok(task.id);
  assert.ok(task.contextId);
  assert.equal(textOf(task.status.message), 'echo: hello interop');
  assert.equal(task.artifacts.length, 1);
  assert.equal(task.artifacts[0].artifactId, 'echo');
  assert.equal(textOf(task.artifacts[0]), 'hello interop');

  const got = await client.getTask(getTaskRequest({ id: task.id, historyLength: 10 }), bounded());
  assert.equal(got.id, task.id);
  assertState(got, TaskState.TASK_STATE_COMPLETED);
  assert.ok(got.history.length >= 1);
  assert.equal(textOf(got.history[0]), 'hello interop');
  assert.equal(got.history[0].role, 1 /* ROLE_USER */);

  const listed = await client.listTasks(
    listTasksRequest({ contextId: task.contextId, includeArtifacts: true }),
    bounded(),
  );
  assert.equal(listed.totalSize, 1);
  assert.equal(listed.tasks.length, 1);
  assert.equal(listed.tasks[0].id, task.id);
  assert.equal(textOf(listed.tasks[0].artifacts[0]), 'hello interop');

  const byState = await client.listTasks(
    listTasksRequest({ status: 'TASK_STATE_COMPLETED', pageSize: 100 }),
    bounded(),
  );
  assert.ok(byState.tasks.some((t) => t.id === task.id));
  assert.ok(byState.tasks.every((t) => t.status.state === TaskState.TASK_STATE_COMPLETED));
});

test('streaming send yields the task, its updates and the artifact', async () => {
  const client = await clientFor(TENANT);
  const events = await collect(client.sendMessageStream(sendRequest('stream me'), bounded()));
  const cases = eventCases(events);
  assert.equal(cases[0], 'task', `events: ${cases}`);
  assert.ok(cases.includes('artifactUpdate'), `events: ${cases}`);
  const last = events[events.length - 1];
  assert.equal(last.payload.$case, 'statusUpdate');
  assert.equal(eventState(last), TaskState.TASK_STATE_COMPLETED);
  const taskId = events[0].payload.value.id;
  for (const e of events.slice(1)) assert.equal(e.payload.value.taskId, taskId);
  const artifact = events.find((e) => e.payload.$case === 'artifactUpdate').payload.value.artifact;
  assert.equal(textOf(artifact), 'stream me');
});

test('multi-turn: INPUT_REQUIRED, then a follow-up on the same task completes it', async () => {
  const client = await clientFor(TENANT);
  const first = asTask(await client.sendMessage(sendRequest('ask'), bounded()));
  assertState(first, TaskState.TASK_STATE_INPUT_REQUIRED);
  assert.equal(textOf(first.status.message), 'what should I echo?');
  const second = asTask(
    await client.sendMessage(
      sendRequest('second turn', { message: { taskId: first.id, contextId: first.contextId } }),
      bounded(),
    ),
  );
  assert.equal(second.id, first.id);
  assertState(second, TaskState.TASK_STATE_COMPLETED);
  assert.equal(textOf(second.status.message), 'echo: second turn');
  const got = await client.getTask(getTaskRequest({ id: first.id, historyLength: 50 }), bounded());
  const userTexts = got.history.filter((m) => m.role === 1).map(textOf);
  assert.deepEqual(userTexts, ['ask', 'second turn']);
});

test('subscribe to a running task, cancel it, and see CANCELED on the subscription', async () => {
  const client = await clientFor(TENANT);
  const submitted = asTask(
    await client.sendMessage(
      sendRequest('hold', { configuration: { returnImmediately: true } }),
      bounded(),
    ),
  );
  assert.ok(
    [TaskState.TASK_STATE_SUBMITTED, TaskState.TASK_STATE_WORKING].includes(submitted.status.state),
    `state ${submitted.status.state}`,
  );
  let canceled;
  const events = await collect(
    client.resubscribeTask(subscribeRequest({ id: submitted.id }), bounded()),
    async (event) => {
      if (canceled === undefined && eventState(event) === TaskState.TASK_STATE_WORKING) {
        canceled = await client.cancelTask(cancelTaskRequest({ id: submitted.id }), bounded());
      }
    },
  );
  assert.ok(canceled, `never saw WORKING: ${eventCases(events)}`);
  assertState(canceled, TaskState.TASK_STATE_CANCELED, 'CancelTask answer');
  assert.equal(events[0].payload.$case, 'task');
  assert.equal(eventState(events[events.length - 1]), TaskState.TASK_STATE_CANCELED);
  const got = await client.getTask(getTaskRequest({ id: submitted.id }), bounded());
  assertState(got, TaskState.TASK_STATE_CANCELED);
});

test('push configs through the SDK; the webhook body parses as an SDK StreamResponse', async () => {
  const posts = [];
  let wake = () => {};
  const hook = http.createServer((req, res) => {
    let body = '';
    req.on('data', (chunk) => (body += chunk));
    req.on('end', () => {
      posts.push({ headers: req.headers, body });
      res.writeHead(200).end();
      wake();
    });
  });
  await new Promise((resolve) => hook.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${hook.address().port}/hook`;
  try {
    const client = await clientFor(TENANT);
    const task = asTask(
      await client.sendMessage(
        sendRequest('hold', { configuration: { returnImmediately: true } }),
        bounded(),
      ),
    );
    const created = await client.createTaskPushNotificationConfig(
      TaskPushNotificationConfig.fromJSON({
        taskId: task.id,
        id: 'interop-hook',
        url,
        token: 'interop-token',
      }),
      bounded(),
    );
    assert.equal(created.taskId, task.id);
    assert.equal(created.id, 'interop-hook');
    assert.equal(created.url, url);
    const got = await client.getTaskPushNotificationConfig(
      GetTaskPushNotificationConfigRequest.fromJSON({ taskId: task.id, id: created.id }),
      bounded(),
    );
    assert.equal(got.url, url);
    assert.equal(got.token, 'interop-token');
    const listed = await client.listTaskPushNotificationConfig(
      ListTaskPushNotificationConfigsRequest.fromJSON({ taskId: task.id }),
      bounded(),
    );
    assert.deepEqual(
      listed.configs.map((c) => c.id),
      ['interop-hook'],
    );

    const canceled = await client.cancelTask(cancelTaskRequest({ id: task.id }), bounded());
    assertState(canceled, TaskState.TASK_STATE_CANCELED);
    const parsed = () =>
      posts.map((p) => ({ headers: p.headers, event: StreamResponse.fromJSON(JSON.parse(p.body)) }));
    const isCanceled = (p) =>
      p.event.payload?.$case === 'statusUpdate' &&
      p.event.payload.value.status?.state === TaskState.TASK_STATE_CANCELED;
    await new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no CANCELED webhook: ${JSON.stringify(posts)}`)), WAIT_MS);
      wake = () => {
        if (parsed().some(isCanceled)) {
          clearTimeout(timer);
          resolve();
        }
      };
      wake();
    });
    const post = parsed().find(isCanceled);
    assert.equal(post.event.payload.value.taskId, task.id);
    assert.equal(post.headers['x-a2a-notification-token'], 'interop-token');

    await client.deleteTaskPushNotificationConfig(
      DeleteTaskPushNotificationConfigRequest.fromJSON({ taskId: task.id, id: created.id }),
      bounded(),
    );
    const after = await client.listTaskPushNotificationConfig(
      ListTaskPushNotificationConfigsRequest.fromJSON({ taskId: task.id }),
      bounded(),
    );
    assert.equal(after.configs.length, 0);
  } finally {
    hook.close();
  }
});

test('A2A errors arrive as the SDK typed errors (ErrorInfo reason and gRPC code)', async () => {
  const client = await clientFor(TENANT);
  await assert.rejects(
    client.getTask(getTaskRequest({ id: 'no-such-task' }), bounded()),
    (err) => {
      assert.ok(err instanceof TaskNotFoundError, `${err}`);
      assert.equal(err.reason, 'TASK_NOT_FOUND');
      assert.equal(err.status, 5 /* NOT_FOUND */);
      return true;
    },
  );

  const done = asTask(await client.sendMessage(sendRequest('finish me'), bounded()));
  assertState(done, TaskState.TASK_STATE_COMPLETED);
  await assert.rejects(
    client.cancelTask(cancelTaskRequest({ id: done.id }), bounded()),
    (err) => {
      assert.ok(err instanceof TaskNotCancelableError, `${err}`);
      assert.equal(err.status, 9 /* FAILED_PRECONDITION */);
      return true;
    },
  );
  await assert.rejects(
    collect(client.resubscribeTask(subscribeRequest({ id: done.id }), bounded())),
    (err) => {
      assert.ok(err instanceof UnsupportedOperationError, `${err}`);
      assert.equal(err.status, 9 /* FAILED_PRECONDITION */);
      return true;
    },
  );
  await assert.rejects(
    client.sendMessage(
      sendRequest('too late', { message: { taskId: done.id, contextId: done.contextId } }),
      bounded(),
    ),
    (err) => {
      assert.ok(err instanceof UnsupportedOperationError, `${err}`);
      return true;
    },
  );
});

test('an unknown tenant is NOT_FOUND; a foreign A2A-Version is VERSION_NOT_SUPPORTED', async () => {
  const transport = await rawTransport();
  await assert.rejects(
    transport.sendMessage(
      Object.assign(sendRequest('anyone?'), { tenant: 'no-such-agent' }),
      bounded(),
    ),
    (err) => {
      assert.ok(err instanceof A2AError, `${err}`);
      assert.equal(err.status, 5 /* NOT_FOUND */);
      return true;
    },
  );
  await assert.rejects(
    transport.getTask(getTaskRequest({ tenant: TENANT, id: 'whatever' }), {
      ...bounded(),
      serviceParameters: { 'A2A-Version': '0.3' },
    }),
    (err) => {
      assert.ok(err instanceof VersionNotSupportedError, `${err}`);
      assert.equal(err.status, 9 /* FAILED_PRECONDITION */);
      return true;
    },
  );
});

test('GetExtendedAgentCard: UnsupportedOperation, since no card declares an extended card', async () => {
  // Specification section 3.3.3: with capabilities.extendedAgentCard false or absent the call
  // MUST be UnsupportedOperationError. The SDK Client never asks; the bare transport does.
  const transport = await rawTransport();
  const v1 = { ...bounded(), serviceParameters: { 'A2A-Version': '1.0' } };
  for (const tenant of [undefined, TENANT, 'jsecho']) {
    await assert.rejects(
      transport.getExtendedAgentCard(GetExtendedAgentCardRequest.fromJSON(tenant ? { tenant } : {}), v1),
      (err) => {
        assert.ok(err instanceof UnsupportedOperationError, `${tenant}: ${err}`);
        assert.equal(err.status, 9 /* FAILED_PRECONDITION */);
        return true;
      },
    );
  }
});

test('every call used /lf.a2a.v1.A2AService/* with A2A-Version: 1.0', () => {
  // The raw transport adds no header of its own; the Client always sends 1.0.
  const raw = calls.filter((c) => c.version.length === 0 || c.version[0] !== '1.0');
  assert.ok(raw.length <= 2, `calls without 1.0: ${JSON.stringify(raw)}`);
  assertCallsSpokeV1((c) => raw.includes(c));
  const paths = new Set(calls.map((c) => c.path.split('/').pop()));
  for (const method of [
    'SendMessage',
    'SendStreamingMessage',
    'GetTask',
    'ListTasks',
    'CancelTask',
    'SubscribeToTask',
    'CreateTaskPushNotificationConfig',
    'GetTaskPushNotificationConfig',
    'ListTaskPushNotificationConfigs',
    'DeleteTaskPushNotificationConfig',
    'GetExtendedAgentCard',
  ]) {
    assert.ok(paths.has(method), `${method} was not exercised`);
  }
});
