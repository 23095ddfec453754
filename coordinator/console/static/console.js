// The coordinator's web console: plain JavaScript, no framework, nothing fetched from elsewhere.
// Views are #fragments; each reads the JSON endpoints under /console/api/ and is drawn again
// when the event stream (/console/api/events) announces a change. With a token file the
// coordinator answers 401 and the page asks for a bearer token (kept for this tab only).
'use strict';

const state = { token: sessionStorage.getItem('coordinator-token') || '', view: null,
  refreshTimer: null, metrics: null, streamAbort: null, changes: 0 };

// ---- DOM helpers: every text goes through textContent, never innerHTML. ----
function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'class') el.className = v;
    else if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  for (const c of children.flat()) {
    if (c === undefined || c === null || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}
function badge(status) {
  const s = String(status || 'unknown').toLowerCase()
    .replace(/^(context_status_|item_status_|run_status_|task_state_)/, '').replace(/_/g, '-');
  return h('span', { class: 'badge s-' + s }, s);
}
function age(ts) {
  if (!ts) return '';
  const secs = Math.max(0, (Date.now() - Date.parse(ts)) / 1000);
  if (secs < 60) return Math.round(secs) + 's';
  if (secs < 3600) return Math.round(secs / 60) + 'm';
  if (secs < 86400) return (secs / 3600).toFixed(1) + 'h';
  return (secs / 86400).toFixed(1) + 'd';
}
function time(ts) { return ts ? new Date(ts).toISOString().replace('T', ' ').slice(0, 19) : ''; }
function dur(d) {
  if (!d) return '';
  const s = parseFloat(String(d).replace('s', ''));
  return s < 1 ? Math.round(s * 1000) + ' ms' : s.toFixed(2) + ' s';
}
function score(x) { return x === null || x === undefined ? '' : Number(x).toFixed(3); }
function table(headers, rows) {
  return h('table', {},
    h('thead', {}, h('tr', {}, headers.map((x) => h('th', { class: x.num ? 'num' : null },
      x.label || x)))),
    h('tbody', {}, rows));
}

// ---- Calls. ----
class HttpError extends Error {
  constructor(status, message) { super(message); this.status = status; }
}
function headers() {
  return state.token ? { Authorization: 'Bearer ' + state.token } : {};
}
async function api(path) {
  const res = await fetch(path, { headers: headers(), cache: 'no-store' });
  const text = await res.text();
  if (!res.ok) {
    let message = text;
    try { message = JSON.parse(text).error.message; } catch (e) { /* not our JSON */ }
    throw new HttpError(res.status, message);
  }
  return JSON.parse(text);
}

function askToken(reason) {
  const dialog = document.getElementById('token-dialog');
  document.getElementById('token-reason').textContent = reason;
  if (!dialog.open) dialog.showModal();
  document.getElementById('token-input').focus();
}
document.getElementById('token-form').addEventListener('submit', () => {
  state.token = document.getElementById('token-input').value.trim();
  sessionStorage.setItem('coordinator-token', state.token);
  startStream();
  render();
});

// ---- Views. ----
const views = {
  async overview() {
    const data = await api('/console/api/overview');
    const m = await sampleMetrics();
    const cards = h('div', { class: 'cards' },
      card(data.evaluations.active, 'active evaluations'),
      card(data.evaluations.ended, 'ended evaluations'),
      card(data.runs.active, 'active runs'), card(data.runs.ended, 'ended runs'),
      card(m.rate === null ? '…' : m.rate.toFixed(1), 'calls per second'),
      card((100 * m.errorRate).toFixed(1) + ' %', m.rate === null ? 'error rate since start' : 'error rate'),
      card(m.total, 'calls since start'));
    const agents = data.agents.length === 0 ? h('p', { class: 'muted' }, 'No agent registered.') :
      table(['Agent', 'Binding', 'Endpoint', 'Reachable', 'Last seen', 'Last call',
        { label: 'Queued deliveries', num: 1 }, 'Registered'], data.agents.map((row) => {
        const a = row.agent;
        // What the gateway observed: its last call to the agent (a delivery, a probe, ...).
        const reach = row.reachable === null ?
          h('span', { class: 'reach' }, badge('unknown'), row.probing ? ' probing…' : '') :
          row.reachable ? h('span', { class: 'reach' }, badge('reachable')) :
            h('span', { class: 'reach' }, badge('unreachable'), ' ', h('span', { class: 'error-text' }, row.lastError));
        return h('tr', { 'data-id': a.name }, h('td', {}, a.name), h('td', {}, a.protocolBinding || 'GRPC'),
          h('td', {}, a.endpoint || a.cardUrl || ''), h('td', {}, reach),
          h('td', { class: 'last-seen' }, row.lastSeen ? age(row.lastSeen) + ' ago' : 'not since start'),
          h('td', { class: 'muted' }, row.lastCall ? row.lastCallVia + ', ' + age(row.lastCall) + ' ago' : '—'),
          h('td', { class: 'num' }, row.queuedDeliveries), h('td', {}, age(a.createTime) + ' ago'));
      }));
    return [h('h2', {}, 'Overview'), cards, h('h2', {}, 'Agents'), agents];
  },

  async evaluations(params) {
    const q = new URLSearchParams();
    if (params.get('agent')) q.set('agent', params.get('agent'));
    if (params.get('purple')) q.set('purple', params.get('purple'));
    if (params.get('status')) q.set('status', params.get('status'));
    if (params.get('page')) q.set('page', params.get('page'));
    const data = await api('/console/api/evaluations?' + q);
    const agent = h('input', { id: 'filter-agent', placeholder: 'green agent', value: params.get('agent') || '' });
    const purple = h('input', { id: 'filter-purple', placeholder: 'agent under test', value: params.get('purple') || '' });
    const status = h('select', { id: 'filter-status' },
      ['all', 'active', 'completed', 'failed', 'canceled'].map((s) =>
        h('option', { value: s, selected: (params.get('status') || 'all') === s }, s)));
    const apply = () => {
      const p = new URLSearchParams();
      if (agent.value) p.set('agent', agent.value);
      if (purple.value) p.set('purple', purple.value);
      if (status.value !== 'all') p.set('status', status.value);
      location.hash = '#/evaluations' + (p.toString() ? '?' + p : '');
    };
    agent.addEventListener('change', apply);
    purple.addEventListener('change', apply);
    status.addEventListener('change', apply);
    const rows = data.evaluations.map((e) => {
      const c = e.context; const labels = c.labels || {};
      return h('tr', { class: 'click', 'data-id': c.contextId,
        onclick: () => { location.hash = '#/evaluations/' + encodeURIComponent(c.contextId); } },
      h('td', {}, c.contextId), h('td', {}, c.externalTaskId || ''), h('td', {}, c.agent || ''),
      h('td', {}, labels.purple_agent || ''), h('td', {}, badge(c.status)),
      h('td', { class: 'num' }, score(e.score)), h('td', { class: 'num' }, c.commandCount || 0),
      h('td', { class: 'num' }, c.failedCommands || 0),
      h('td', { class: 'num' }, e.conversation ? (e.conversation.totalTokens || 0) : 0),
      h('td', { class: 'num' }, age(c.createTime)));
    });
    // Newest first; a page ends after its rows or after the server read its share of the index.
    const pages = h('div', { class: 'pages' });
    if (params.get('page')) {
      pages.append(h('a', { href: '#/evaluations' + filterQuery(params, null), id: 'newest' }, '← newest'), ' ');
    }
    if (data.next) {
      pages.append(h('a', { href: '#/evaluations' + filterQuery(params, data.next), id: 'older' }, 'older →'));
    }
    return [h('h2', {}, 'Evaluations'), h('div', { class: 'filters' }, agent, purple, status),
      data.evaluations.length === 0 ? h('p', { class: 'muted' },
        data.next ? 'None among the newest; look at older ones.' : 'No evaluation matches.') :
        table(['Context', 'Task', 'Green agent', 'Purple agent', 'Status', { label: 'Score', num: 1 },
          { label: 'Commands', num: 1 }, { label: 'Failed', num: 1 }, { label: 'Tokens', num: 1 },
          { label: 'Age', num: 1 }], rows), pages];
  },

  async evaluation(params, id) {
    const e = await api('/console/api/evaluations/' + encodeURIComponent(id));
    const c = e.context; const labels = c.labels || {};
    const entries = [];
    for (const m of e.conversation.messages) {
      entries.push({ t: m.time, kind: 'turn ' + String(m.role || '').replace('ROLE_', '').toLowerCase(),
        body: m.text + (m.tokens ? '  (' + m.tokens + ' tokens)' : '') });
    }
    for (const cmd of e.commands) {
      entries.push({ t: cmd.time, kind: 'command', bad: (cmd.exitCode || 0) !== 0,
        body: '$ ' + cmd.command + '  → exit ' + (cmd.exitCode || 0) + ', ' + dur(cmd.duration) });
    }
    for (const task of e.tasks) {
      for (const ev of task.events) {
        const r = ev.event || {};
        if (r.statusUpdate) {
          const st = r.statusUpdate.status || {};
          entries.push({ t: ev.time, kind: 'A2A status', bad: /FAILED|REJECTED/.test(st.state || ''),
            body: task.task.id + ': ' + String(st.state || '').replace('TASK_STATE_', '').toLowerCase() +
              (st.message ? ' — ' + partsText(st.message.parts) : '') });
        } else if (r.artifactUpdate) {
          const a = r.artifactUpdate.artifact || {};
          entries.push({ t: ev.time, kind: 'A2A artifact',
            body: (a.name || a.artifactId || '') + ': ' + partsText(a.parts) });
        } else if (r.task) {
          entries.push({ t: ev.time, kind: 'A2A task', body: task.task.id + ' created' });
        } else if (r.message) {
          entries.push({ t: ev.time, kind: 'A2A message', body: partsText(r.message.parts) });
        }
      }
    }
    entries.sort((a, b) => Date.parse(a.t || 0) - Date.parse(b.t || 0));
    const timeline = entries.length === 0 ? h('p', { class: 'muted' }, 'Nothing happened yet.') :
      h('ol', { class: 'timeline', id: 'timeline' }, entries.map((x) =>
        h('li', { class: x.bad ? 'bad' : null }, h('span', { class: 't' }, time(x.t)),
          h('span', { class: 'kind' }, x.kind), h('span', { class: 'body' }, x.body))));
    // A context of A2A tasks alone: a scenario's exchange between agents we did not write.
    if (e.a2aOnly) {
      return [h('h2', {}, 'Exchange ', c.contextId),
        h('div', { class: 'cards' }, card(e.tasks.length, 'A2A tasks')),
        h('h2', {}, 'Timeline'), timeline];
    }
    return [
      h('h2', {}, 'Evaluation ', c.contextId, ' ', badge(c.status)),
      h('div', { class: 'cards' }, card(c.externalTaskId || '—', 'task'),
        card(labels.purple_agent || '—', 'agent under test'), card(score(e.score) || '—', 'score'),
        card(c.commandCount || 0, 'commands'), card(c.failedCommands || 0, 'failed commands'),
        card(e.conversation.stepCount || 0, 'agent steps'),
        card(e.conversation.totalTokens || 0, 'tokens'), card(labels.phase || '—', 'phase')),
      h('h2', {}, 'Timeline'),
      // A long evaluation shows its newest commands and messages.
      Number(c.commandCount || 0) > e.commands.length ||
        Number(e.conversation.messageCount || 0) > e.conversation.messages.length ?
        h('p', { class: 'muted', id: 'timeline-note' }, 'The newest ' + e.commands.length + ' of ' +
          (c.commandCount || 0) + ' commands and ' + e.conversation.messages.length + ' of ' +
          (e.conversation.messageCount || 0) + ' messages.') : null,
      timeline,
    ];
  },

  async leaderboard() {
    const data = await api('/console/api/leaderboard');
    const rows = (list) => list.map((r) => h('tr', {}, h('td', {}, r.key),
      h('td', { class: 'num' }, score(r.mean)), h('td', { class: 'num' }, r.count)));
    const hdr = (first) => [first, { label: 'Mean score', num: 1 }, { label: 'Count', num: 1 }];
    return [h('h2', {}, 'Leaderboard by agent under test'),
      data.byAgent.length === 0 ? h('p', { class: 'muted' }, 'No scored evaluation yet.') :
        table(hdr('Agent'), rows(data.byAgent)),
      h('h2', {}, 'By task'),
      data.byTask.length === 0 ? h('p', { class: 'muted' }, 'No scored evaluation yet.') :
        table(hdr('Task'), rows(data.byTask)),
      // How the agents compare on each task: mean (count) per task and agent.
      h('h2', {}, 'By task and agent'),
      data.cells.length === 0 ? h('p', { class: 'muted' }, 'No scored evaluation yet.') :
        matrix(data)];
  },

  // The leaderboard by scenario run (coordctl scenario run): best mean score first, runs with no
  // score yet after them.
  async scenarios(params) {
    const page = params.get('page');
    const data = await api('/console/api/scenarios' + (page ? '?page=' + encodeURIComponent(page) : ''));
    const runs = [...data.runs].sort((a, b) => (b.mean ?? -Infinity) - (a.mean ?? -Infinity));
    const out = [h('h2', {}, 'Leaderboard by scenario run')];
    if (runs.length === 0) {
      return out.concat(h('p', { class: 'muted' }, 'No scenario run.'), pager('scenarios', page, ''));
    }
    out.push(table(['Run', 'Participants', { label: 'Assessments', num: 1 }, 'States',
      { label: 'Scored', num: 1 }, { label: 'Mean score', num: 1 }, { label: 'Updated', num: 1 }],
    runs.map((r) => h('tr', { class: 'click', 'data-id': r.runId,
      onclick: () => { location.hash = '#/scenarios/' + encodeURIComponent(r.runId); } },
    h('td', {}, r.runId), h('td', {}, r.participants.map((p) => p.slice(r.runId.length + 1)).join(', ')),
    h('td', { class: 'num' }, r.assessments), h('td', {}, stateCounts(r.states)),
    h('td', { class: 'num' }, r.scored), h('td', { class: 'num' }, score(r.mean)),
    h('td', { class: 'num' }, r.updated ? age(r.updated) + ' ago' : '')))));
    return out.concat(pager('scenarios', page, data.next));
  },

  // One scenario run: each assessment (shard and repeat) with its state and score; a row opens
  // the exchange of its context.
  async scenario(params, id) {
    const data = await api('/console/api/scenarios/' + encodeURIComponent(id));
    const r = data.run;
    const stem = 'scenario-' + r.runId;
    const rows = data.assessments.map((a) => {
      const t = a.task;
      const label = t.contextId === stem ? '—' : t.contextId.slice(stem.length + 1);
      return h('tr', { class: 'click', 'data-id': t.contextId,
        onclick: () => { location.hash = '#/evaluations/' + encodeURIComponent(t.contextId); } },
      h('td', {}, label), h('td', {}, t.contextId), h('td', {}, t.id), h('td', {}, badge(t.status && t.status.state)),
      h('td', { class: 'num' }, score(a.score)),
      h('td', { class: 'muted' }, (t.artifacts || []).map((x) => x.name || x.artifactId).join(', ')));
    });
    return [h('h2', {}, 'Scenario run ', r.runId),
      h('div', { class: 'cards' }, card(r.assessments, 'assessments'), card(r.scored, 'scored'),
        card(score(r.mean) || '—', 'mean score'), card(stateCounts(r.states) || '—', 'states')),
      h('p', {}, 'Agents: ', [r.greenAgent, ...r.participants].join(', ')),
      rows.length === 0 ? h('p', { class: 'muted' }, 'No assessment sent yet.') :
        table(['Shard', 'Context', 'Task', 'State', { label: 'Score', num: 1 }, 'Artifacts'], rows)];
  },

  async runs(params) {
    const page = params.get('page');
    const data = await api('/console/api/runs' + (page ? '?page=' + encodeURIComponent(page) : ''));
    const runs = data.runs || [];
    const out = [h('h2', {}, 'Runs')];
    if (runs.length === 0) return out.concat(h('p', { class: 'muted' }, 'No run.'), pager('runs', page, ''));
    out.push(table(['Run', 'Kind', 'Status', { label: 'Items', num: 1 }, { label: 'Age', num: 1 }],
      runs.map((r) => h('tr', { class: 'click', 'data-id': r.runId,
        onclick: () => { location.hash = '#/runs/' + encodeURIComponent(r.runId); } },
      h('td', {}, r.runId), h('td', {}, String(r.kind || '').replace('RUN_KIND_', '').toLowerCase()),
      h('td', {}, badge(r.status)), h('td', { class: 'num' }, itemCount(r.counts)),
      h('td', { class: 'num' }, age(r.createTime))))));
    return out.concat(pager('runs', page, data.nextPageToken));
  },

  async run(params, id) {
    const data = await api('/console/api/runs/' + encodeURIComponent(id));
    const byLevel = new Map();
    for (const item of data.items) {
      const level = Number(item.level || 0);
      if (!byLevel.has(level)) byLevel.set(level, []);
      byLevel.get(level).push(item);
    }
    const levels = [...byLevel.keys()].sort((a, b) => a - b);
    return [h('h2', {}, 'Run ', data.run.runId, ' ', badge(data.run.status)),
      levels.map((level) => h('div', { class: 'level' }, h('h3', {}, 'Level ' + level),
        h('div', { class: 'items' }, byLevel.get(level).map((item) =>
          h('div', { class: 'item ' + (item.status || ''), 'data-id': item.itemId },
            h('div', { class: 'title' }, item.itemId, ' ', badge(item.status)),
            item.title ? h('div', {}, item.title) : null,
            item.workerId ? h('div', {}, 'held by ', item.workerId,
              item.leaseExpireTime ? h('span', { class: 'countdown', 'data-expire': item.leaseExpireTime },
                ' · lease ' + countdown(item.leaseExpireTime)) : null) : null,
            h('div', { class: 'muted' }, 'attempts ' + (item.attempts || 0)),
            item.lastError ? h('div', { class: 'error' }, item.lastError) : null,
            item.checkpoint ? h('div', { class: 'muted' }, 'checkpoint: ', item.checkpoint) : null,
            item.progress ? h('div', { class: 'muted' }, 'progress: ', item.progress) : null)))))];
  },

  async retry(params) {
    const page = params.get('page');
    const data = await api('/console/api/retry' + (page ? '?page=' + encodeURIComponent(page) : ''));
    const ladder = data.ladder;
    const rows = data.tasks.map(({ state: t, analysis: a }) => {
      const failures = t.failures || [];
      const last = failures.length ? failures[failures.length - 1] : null;
      // modelTier counts from 1; the model's name places it on the ladder.
      const tier = t.model ? ladder.indexOf(t.model) : (t.modelTier || 1) - 1;
      const pattern = a.patternType || 'none';
      return h('tr', { 'data-id': t.taskId }, h('td', {}, t.taskId),
        h('td', {}, t.description || ''),
        h('td', {}, h('div', { class: 'ladder' }, ladder.map((m, i) =>
          h('span', { class: i === tier ? 'here' : (i < tier ? 'past' : null) }, m)))),
        h('td', { class: 'num' }, t.attemptCount || 0),
        h('td', { class: 'failures' }, failures.length === 0 ? h('span', { class: 'muted' }, 'none') :
          h('details', {}, h('summary', {}, failures.length + (failures.length === 1 ? ' failure' : ' failures'),
            ': ', h('span', { class: 'error-text' }, last.error)),
          h('ol', { class: 'failure-list' }, failures.slice(-10).map((f) =>
            h('li', { value: f.seq || null }, 'attempt ' + (f.attempt || 0) + ' (' + (f.model || '?') + '): ',
              f.error || ''))))),
        h('td', { class: 'analysis' }, pattern === 'none' ? h('span', { class: 'muted' }, 'no loop') :
          h('span', {}, badge(pattern)),
        h('div', { class: 'muted' }, a.suggestedAction || '')),
        h('td', {}, t.blocked ? badge('blocked') : ''));
    });
    return [h('h2', {}, 'Retry state'),
      rows.length === 0 ? h('p', { class: 'muted' }, 'No task.') :
        table(['Task', 'Description', 'Tier ladder', { label: 'Attempts', num: 1 },
          'Failures', 'Breaker analysis', ''], rows),
      pager('retry', page, data.next),
      h('h2', {}, 'Blocked by the breaker'),
      data.blocked.length === 0 ? h('p', { class: 'muted' }, 'Nothing is blocked.') :
        h('div', { id: 'blocked' }, data.blocked.map((b) => h('div', { class: 'card', 'data-id': b.task.taskId },
          h('div', {}, h('b', {}, b.task.taskId), ' ', b.task.taskDesc || '', ' ', badge('blocked')),
          h('div', { class: 'muted' }, 'reason: ', b.task.reason || '', ' · pattern: ',
            b.task.patternType || '', ' · attempts: ', b.task.attemptCount || 0),
          h('pre', { class: 'summary' }, b.summary || ''))))];
  },
};

// Links to the first page of `view` (when not on it) and to the next one (`next`, when there is).
function pager(view, page, next) {
  const out = h('div', { class: 'pages' });
  if (page) out.append(h('a', { href: '#/' + view, class: 'first' }, '← first'), ' ');
  if (next) out.append(h('a', { href: '#/' + view + '?page=' + encodeURIComponent(next), class: 'next' }, 'more →'));
  return out;
}
// The leaderboard's task-by-agent table: agents in the board's order (best mean first).
function matrix(data) {
  const agents = data.byAgent.map((r) => r.key);
  const tasks = data.byTask.map((r) => r.key);
  const cell = new Map(data.cells.map((c) => [c.task + '\u0000' + c.agent, c]));
  return h('table', { id: 'matrix' },
    h('thead', {}, h('tr', {}, h('th', {}, 'Task'), agents.map((a) => h('th', { class: 'num' }, a)))),
    h('tbody', {}, tasks.map((t) => h('tr', { 'data-id': t }, h('td', {}, t), agents.map((a) => {
      const c = cell.get(t + '\u0000' + a);
      return h('td', { class: 'num' }, c ? score(c.mean) + ' (' + c.count + ')' : '—');
    })))));
}
// The evaluations' filters of `params` as a query, with `page` (null: from the newest).
function filterQuery(params, page) {
  const p = new URLSearchParams();
  for (const k of ['agent', 'purple', 'status']) if (params.get(k)) p.set(k, params.get(k));
  if (page) p.set('page', page);
  return p.toString() ? '?' + p : '';
}
// "8 completed, 1 working" from {"completed": 8, "working": 1}.
function stateCounts(states) {
  return Object.entries(states || {}).map(([s, n]) => n + ' ' + s).join(', ');
}
function card(n, label) { return h('div', { class: 'card' }, h('div', { class: 'n' }, n), h('div', { class: 'l' }, label)); }
function partsText(parts) {
  return (parts || []).map((p) => p.text !== undefined ? p.text :
    (p.data !== undefined ? JSON.stringify(p.data) : '[file]')).join(' ');
}
function itemCount(counts) {
  if (!counts) return 0;
  return Object.values(counts).reduce((a, b) => a + Number(b || 0), 0);
}
function countdown(ts) {
  const secs = Math.round((Date.parse(ts) - Date.now()) / 1000);
  return secs >= 0 ? secs + 's left' : 'expired';
}

// Calls per second and error rate from two samples of /metrics (coordinator_grpc_requests_total).
async function sampleMetrics() {
  let text = '';
  try {
    const res = await fetch('/metrics', { headers: headers(), cache: 'no-store' });
    if (res.ok) text = await res.text();
  } catch (e) { /* shown as unknown */ }
  let total = 0; let errors = 0;
  for (const line of text.split('\n')) {
    if (!line.startsWith('coordinator_grpc_requests_total{')) continue;
    const value = Number(line.slice(line.lastIndexOf(' ') + 1));
    total += value;
    if (!/code="OK"/.test(line)) errors += value;
  }
  const now = Date.now();
  const prev = state.metrics;
  state.metrics = { now, total, errors };
  if (!prev || now <= prev.now) return { total, rate: null, errorRate: total > 0 ? errors / total : 0 };
  const calls = total - prev.total;
  return { total, rate: calls / ((now - prev.now) / 1000),
    errorRate: calls > 0 ? (errors - prev.errors) / calls : 0 };
}

// ---- Routing and drawing. ----
function route() {
  const hash = location.hash.replace(/^#\/?/, '') || 'overview';
  const [path, query] = hash.split('?');
  const parts = path.split('/').map(decodeURIComponent);
  const params = new URLSearchParams(query || '');
  if (parts[0] === 'evaluations' && parts[1]) return { name: 'evaluation', nav: 'evaluations', params, id: parts[1] };
  if (parts[0] === 'runs' && parts[1]) return { name: 'run', nav: 'runs', params, id: parts[1] };
  if (parts[0] === 'scenarios' && parts[1]) return { name: 'scenario', nav: 'scenarios', params, id: parts[1] };
  if (views[parts[0]]) return { name: parts[0], nav: parts[0], params };
  return { name: 'overview', nav: 'overview', params };
}

let rendering = Promise.resolve();
function render() {
  rendering = rendering.then(renderNow, renderNow);
  return rendering;
}
async function renderNow() {
  // The hash this render is for: tests (and anything else) wait for main[data-route] to match the
  // hash they set, since a hash change keeps the page and the previous view stays until then.
  const hash = location.hash;
  const r = route();
  for (const a of document.querySelectorAll('nav a')) a.classList.toggle('active', a.dataset.view === r.nav);
  const main = document.getElementById('main');
  try {
    const content = await views[r.name](r.params, r.id);
    main.replaceChildren(...[content].flat(2));
    main.dataset.view = r.name;
    main.dataset.route = hash;
  } catch (e) {
    if (e instanceof HttpError && (e.status === 401 || e.status === 403)) {
      askToken(e.status === 401 ? 'This coordinator asks for a bearer token (' + e.message +
        '). A token of the reader role is enough.' : e.message);
    }
    main.replaceChildren(h('p', { class: 'error', id: 'error' }, e.message || String(e)));
    main.dataset.view = 'error';
    main.dataset.route = hash;
  }
}

function scheduleRefresh() {
  if (state.refreshTimer) return;
  state.refreshTimer = setTimeout(() => { state.refreshTimer = null; render(); }, 250);
}

// The event stream, read with fetch (EventSource cannot send the Authorization header).
async function startStream() {
  if (state.streamAbort) state.streamAbort.abort();
  const abort = new AbortController();
  state.streamAbort = abort;
  const live = document.getElementById('live');
  let after = null;
  while (!abort.signal.aborted) {
    try {
      const res = await fetch('/console/api/events' + (after !== null ? '?after=' + after : ''),
        { headers: headers(), signal: abort.signal, cache: 'no-store' });
      if (res.status === 401 || res.status === 403) { live.textContent = 'offline'; return; }
      if (!res.ok || !res.body) throw new Error('HTTP ' + res.status);
      live.className = 'live on'; live.textContent = 'live';
      const reader = res.body.getReader();
      const decoder = new TextDecoder();
      let buffer = '';
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buffer += decoder.decode(value, { stream: true });
        let end;
        while ((end = buffer.indexOf('\n\n')) >= 0) {
          const block = buffer.slice(0, end); buffer = buffer.slice(end + 2);
          let event = 'message'; let data = '';
          for (const line of block.split('\n')) {
            if (line.startsWith('event: ')) event = line.slice(7);
            else if (line.startsWith('data: ')) data += line.slice(6);
          }
          if (event === 'hello' || event === 'change') {
            try { after = JSON.parse(data).seq; } catch (e) { /* keep the old cursor */ }
          }
          if (event === 'change' || event === 'resync') {
            state.changes++;
            live.dataset.changes = String(state.changes);
            scheduleRefresh();
          }
        }
      }
    } catch (e) {
      if (abort.signal.aborted) return;
    }
    live.className = 'live off'; live.textContent = 'reconnecting';
    await new Promise((resolve) => setTimeout(resolve, 2000));
  }
}

// The overview's rates are samples of /metrics: draw it again every few seconds while shown.
setInterval(() => {
  if (document.getElementById('main').dataset.view === 'overview' && !document.hidden) render();
}, 5000);

// Lease countdowns tick between changes.
setInterval(() => {
  for (const el of document.querySelectorAll('.countdown')) el.textContent = ' · lease ' + countdown(el.dataset.expire);
}, 1000);

window.addEventListener('hashchange', render);
render();
startStream();
