// The web console in headless chromium (tests/console/run.sh starts the coordinators and seeds
// them): each view shows what was stored, changes made with coordctl after a page loaded (a
// command, a new context, a new run, a failure) reach it over the event stream, the overview
// tells a reachable agent from one nothing answers for, and a coordinator with a token file gets
// the token prompt.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import path from 'node:path';
import puppeteer from 'puppeteer-core';

const run = promisify(execFile);
const env = process.env;
const base = env.CONSOLE_URL;
let browser;
let page;

async function shot(name) {
  if (!env.CONSOLE_SCREENSHOTS) return;
  await page.screenshot({ path: path.join(env.CONSOLE_SCREENSHOTS, name + '.png'), fullPage: true });
}
async function coordctl(...args) {
  const { stdout } = await run(env.CONSOLE_COORDCTL, ['--target', env.CONSOLE_TARGET, ...args]);
  return stdout;
}
// The text of the element `selector` once it matches `pattern` (waits for it; the page is
// drawn again on each change it hears of).
async function textOnceItMatches(selector, pattern) {
  const handle = await page.waitForFunction(
    (s, source, flags) => {
      const el = document.querySelector(s);
      return el && new RegExp(source, flags).test(el.innerText) ? el.innerText : null;
    },
    {},
    selector,
    pattern.source,
    pattern.flags,
  );
  return handle.jsonValue();
}
// Opens `hash` and waits until the view rendered for that very hash (a hash change keeps the
// page, and the previous view's content stays until the new one is rendered).
async function open(hash, view) {
  await page.goto(base + '/' + hash, { waitUntil: 'domcontentloaded' });
  await page.waitForFunction(
    (h, v) => {
      const main = document.querySelector('main');
      return main && main.dataset.route === h && main.dataset.view === v;
    },
    {},
    hash,
    view,
  );
  return page.$eval('main', (m) => m.innerText);
}

before(async () => {
  browser = await puppeteer.launch({
    executablePath: env.CONSOLE_CHROMIUM,
    headless: true,
    // Root in CI containers has no user namespace for the sandbox.
    args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--no-first-run'],
  });
  page = await browser.newPage();
  await page.setViewport({ width: 1280, height: 800 });
  page.on('pageerror', (e) => { throw e; });
});

after(async () => {
  if (browser) await browser.close();
});

// Reachability is what the gateway observed: the echo agent answered its deliveries and probes;
// nothing answers at the ghost agent's address, so its probe fails and says why.
test('overview: agents, reachable or not, and counts', async () => {
  const text = await open('#/overview', 'overview');
  assert.match(text, /active evaluations/);
  const echo = await textOnceItMatches('tr[data-id="echo"]', /\breachable\b/);
  assert.match(echo, /GRPC/);
  assert.doesNotMatch(echo, /unreachable/);
  assert.match(echo, /\d+(s|m) ago/);  // last seen
  const ghost = await textOnceItMatches('tr[data-id="ghost"]', /unreachable/);
  assert.match(ghost, /127\.0\.0\.1:1/);
  assert.match(ghost, /not since start/);  // never seen
  assert.match(ghost, /probe/);
  await page.waitForSelector('#live.on');
  await shot('overview');
});

// The counts are the stored totals and follow changes live.
test('overview: a context created after the page loaded is counted live', async () => {
  await open('#/overview', 'overview');
  await page.waitForSelector('#live.on');
  const card = () => page.$$eval('.card', (cards) =>
    cards.map((c) => c.innerText).find((t) => /active evaluations/.test(t)));
  const before = parseInt(await card(), 10);
  await coordctl('context', 'put', 'eval-next', '--agent', 'green', '--set',
    'external_task_id=requests-2317', '--set', 'purple_agent=purple-gpt', '--set', 'phase=setup');
  await page.waitForFunction(
    (n) => [...document.querySelectorAll('.card')].some((c) =>
      /active evaluations/.test(c.innerText) && parseInt(c.innerText, 10) === n),
    {},
    before + 1,
  );
});

test('evaluations: the list and its filters', async () => {
  let text = await open('#/evaluations', 'evaluations');
  assert.match(text, /eval-done/);
  assert.match(text, /eval-run/);
  // Newest first: eval-next was created last (by the overview's test).
  assert.equal(await page.$eval('main tbody tr', (tr) => tr.dataset.id), 'eval-next');
  const done = await page.$eval('tr[data-id="eval-done"]', (tr) => tr.innerText);
  assert.match(done, /django-11099/);
  assert.match(done, /purple-gpt/);
  assert.match(done, /0\.750/);
  assert.match(done, /completed/);
  await shot('evaluations');
  text = await open('#/evaluations?status=active', 'evaluations');
  assert.match(text, /eval-run/);
  assert.doesNotMatch(text, /eval-done/);
  text = await open('#/evaluations?purple=purple-gpt', 'evaluations');
  assert.match(text, /eval-done/);
  assert.doesNotMatch(text, /eval-run/);
});

test('one evaluation: its timeline, live while it runs', async () => {
  const text = await open('#/evaluations/eval-run', 'evaluation');
  assert.match(text, /flask-4045/);
  assert.match(text, /\$ ls src\/flask/);
  assert.match(text, /execute: ls src\/flask/);
  assert.match(text, /A2A status/);
  await page.waitForSelector('#live.on');
  await coordctl('context', 'command', 'eval-run', '--exit-code', '2', '--duration', '3s', '--',
    'pytest', 'tests/test_live_update.py');
  await page.waitForFunction(
    () => document.getElementById('timeline')?.innerText.includes('tests/test_live_update.py'));
  const line = await page.$eval('#timeline li:last-child', (li) => li.innerText);
  assert.match(line, /exit 2/);
  await shot('evaluation');
});

test('leaderboard: mean and count by agent and by task', async () => {
  const text = await open('#/leaderboard', 'leaderboard');
  assert.match(text, /purple-gpt\s+0\.750\s+1/);
  assert.match(text, /purple-claude\s+0\.500\s+1/);
  assert.match(text, /django-11099\s+0\.625\s+2/);
  // Task by agent: each agent's mean (count) on each task.
  const row = await page.$eval('#matrix tr[data-id="django-11099"]', (tr) => tr.innerText);
  assert.match(row, /0\.750 \(1\)\s+0\.500 \(1\)/);
  await shot('leaderboard');
});

// The leaderboard by scenario run (coordctl scenario run): the run's mean over the scores its
// judge reported, then each assessment, then one assessment's exchange.
test('scenarios: the leaderboard by run, its assessments and their exchange', async () => {
  let text = await open('#/scenarios', 'scenarios');
  const row = await textOnceItMatches('tr[data-id="sc-demo"]', /0\.750/);
  assert.match(row, /sc-demo\s+solver\s+2\s+2 completed\s+2\s+0\.750/);
  await shot('scenarios');
  await page.click('tr[data-id="sc-demo"]');
  await page.waitForFunction(() => document.querySelector('main').dataset.route === '#/scenarios/sc-demo');
  text = await page.$eval('main', (m) => m.innerText);
  assert.match(text, /s0-r0\s+scenario-sc-demo-s0-r0\s+\S+\s+completed\s+0\.500\s+echo/);
  assert.match(text, /s1-r0\s+scenario-sc-demo-s1-r0\s+\S+\s+completed\s+1\.000/);
  assert.match(text, /sc-demo\.green_agent, sc-demo\.solver/);
  await page.click('tr[data-id="scenario-sc-demo-s1-r0"]');
  await page.waitForFunction(
    () => document.querySelector('main').dataset.route === '#/evaluations/scenario-sc-demo-s1-r0');
  text = await page.$eval('main', (m) => m.innerText);
  assert.match(text, /Exchange scenario-sc-demo-s1-r0/);
  assert.match(text, /A2A artifact\s+echo: \{"score": 1, "shard": 1\}/);
});

test('runs: items by level, holder and lease', async () => {
  let text = await open('#/runs', 'runs');
  assert.match(text, /run-widgets/);
  // A run created after the page loaded appears on it.
  await page.waitForSelector('#live.on');
  await coordctl('run', 'import', env.CONSOLE_GRAPH, '--run-id', 'run-created-live');
  await page.waitForSelector('tr[data-id="run-created-live"]');
  text = await open('#/runs/run-widgets', 'run');
  assert.match(text, /Level 1/);
  assert.match(text, /Level 2/);
  const held = await page.$eval('.item.ITEM_STATUS_RUNNING', (d) => d.innerText);
  assert.match(held, /held by worker-a/);
  assert.match(held, /lease \d+s left/);
  assert.match(held, /schema drafted/);
  await shot('runs');
});

test('retry and breaker: the ladder, failures, the analysis and why a task was blocked', async () => {
  const text = await open('#/retry', 'retry');
  assert.match(text, /Fix the flaky login test/);
  assert.match(text, /ImportError: cannot import name 'login' from 'auth'/);
  const blocked = await page.$eval('#blocked', (d) => d.innerText);
  assert.match(blocked, /the same import error twice at one tier/);
  assert.match(blocked, /Suggested action/);
  // The breaker's analysis of each task: the blocked one failed twice the same way.
  const task = (await coordctl('task', 'init', 'Fix the flaky login test')).trim().split(/\s+/).pop();
  const row = await page.$eval(`tr[data-id="${task}"]`, (tr) => tr.innerText);
  assert.match(row, /repeated-error/);
  assert.match(row, /2 failures/);
  await shot('retry');

  // A failure recorded after the page loaded appears on it, with the analysis it changes.
  await page.waitForSelector('#live.on');
  const other = (await coordctl('task', 'init', 'Add the pagination endpoint')).trim().split(/\s+/).pop();
  await coordctl('task', 'fail', other, 'AssertionError: page 2 is empty (recorded live)');
  const updated = await textOnceItMatches(`tr[data-id="${other}"]`, /recorded live/);
  assert.match(updated, /1 failure\b/);
});

test('a coordinator with a token file asks for a token', async () => {
  await page.goto(env.CONSOLE_SECURED_URL + '/#/overview', { waitUntil: 'domcontentloaded' });
  await page.waitForSelector('#token-dialog[open]');
  const reason = await page.$eval('#token-reason', (p) => p.innerText);
  assert.match(reason, /reader role/);
  await shot('token');
  await page.type('#token-input', 'not-the-token-at-all');
  await page.click('#token-submit');
  await page.waitForSelector('#token-dialog[open]');
  await page.$eval('#token-input', (i) => { i.value = ''; });
  await page.type('#token-input', env.CONSOLE_READER_TOKEN);
  await page.click('#token-submit');
  await page.waitForSelector('main[data-view="overview"]');
  assert.equal(await page.$('#token-dialog[open]'), null);
});
