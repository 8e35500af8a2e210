/**
 * The lock board's browser side: the page, its script and its stylesheet. The controller serves them
 * under a Content-Security-Policy that allows no inline script or style, so the page only links the two
 * assets and hands its settings to the script in data- attributes. Lock keys and tokens are user data:
 * the script builds every dynamic node with DOM calls and textContent, never with markup strings.
 */

const ENTITIES: Record<string, string> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&#39;',
};

/** Escapes the five characters that could end an HTML text node or a quoted attribute. */
export function escapeHtml(value: string): string {
  return value.replace(/[&<>"']/g, (char) => ENTITIES[char]);
}

/** The page's HTML. basePath like '/locks' (already normalised: leading slash, no trailing slash). */
export function boardHtml(basePath: string, options: { readOnly: boolean; title?: string }): string {
  const base = escapeHtml(basePath);
  const title = escapeHtml(options.title ?? 'Locks');
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<link rel="icon" href="data:,">
<title>${title}</title>
<link rel="stylesheet" href="${base}/board.css">
<script src="${base}/board.js" defer></script>
</head>
<body data-base="${base}" data-read-only="${options.readOnly ? 'true' : 'false'}">
<header class="bar">
  <div class="heading">
    <h1>${title}</h1>
    <p class="meta">Instance <code id="instance" data-testid="instance">&hellip;</code>
      &middot; updated <time id="updated" data-testid="updated">never</time></p>
  </div>
  <div class="controls">
    <input id="filter" data-testid="filter" type="search" placeholder="Filter by key" aria-label="Filter by key"
      autocomplete="off" spellcheck="false">
    <button id="pause" data-testid="pause" type="button" aria-pressed="false">Pause</button>
  </div>
  <p id="status" data-testid="status" class="status" role="status" aria-live="polite">Loading&hellip;</p>
</header>
<main>
  <noscript><p class="notice">This page needs JavaScript to show the locks.</p></noscript>
  <p id="truncated" data-testid="truncated" class="notice" hidden></p>
  <div id="locks-wrap" class="table-wrap" hidden>
    <table id="locks" class="locks">
      <thead><tr><th>Key</th><th>Kind</th><th>Holder / queue</th><th>Held / waiting</th><th>TTL left</th>
        <th>Fence</th><th><span class="sr-only">Actions</span></th></tr></thead>
    </table>
  </div>
  <p id="empty" data-testid="empty" class="empty" hidden>No live locks under this prefix.</p>
  <section class="recent">
    <h2>Recent timeouts and lost leases (this instance)</h2>
    <ol id="recent" class="recent-list"></ol>
    <p id="recent-empty" class="muted">None so far.</p>
  </section>
</main>
</body>
</html>
`;
}

/**
 * The browser script, served at `${basePath}/board.js` with content-type application/javascript. Kept to
 * ASCII (other characters as \u escapes) so that it reads the same whatever charset it is served with.
 */
export const BOARD_SCRIPT = `(() => {
  'use strict';
  const POLL_MS = 1000;
  const TIMEOUT_MS = 10000;
  const DEBOUNCE_MS = 250;
  const NOTE_MS = 6000;
  const DASH = '\\u2014';
  const AT_LEAST = '\\u2265 ';

  const body = document.body;
  const base = body.dataset.base || '';
  // Anything but an explicit "false" keeps the page read-only: a missing attribute must not offer releases.
  const pageReadOnly = body.dataset.readOnly !== 'false';
  const byId = (id) => document.getElementById(id);
  const ui = {
    instance: byId('instance'), updated: byId('updated'), status: byId('status'), filter: byId('filter'),
    pause: byId('pause'), wrap: byId('locks-wrap'), table: byId('locks'), empty: byId('empty'),
    truncated: byId('truncated'), recent: byId('recent'), recentEmpty: byId('recent-empty'),
  };

  let readOnly = pageReadOnly;
  let paused = false;
  let timer = 0;
  let debounce = 0;
  let inFlight = null;
  let filter = new URLSearchParams(location.search).get('filter') || '';
  // The outcome of a force release outlives the refresh that follows it, or nobody would see it.
  let note = null;
  ui.filter.value = filter;

  const given = (value) => value !== null && value !== undefined;

  function el(tag, className, text) {
    const node = document.createElement(tag);
    if (className) node.className = className;
    if (given(text)) node.textContent = String(text);
    return node;
  }

  const badge = (text, extra) => el('span', extra ? 'badge ' + extra : 'badge', text);

  function duration(ms) {
    if (typeof ms !== 'number' || !Number.isFinite(ms) || ms < 0) return DASH;
    if (ms < 1000) return Math.round(ms) + ' ms';
    if (ms < 10000) return (Math.floor(ms / 100) / 10).toFixed(1) + ' s';
    if (ms < 60000) return Math.floor(ms / 1000) + ' s';
    const min = Math.floor(ms / 60000);
    if (min < 60) return min + ' min ' + Math.floor((ms % 60000) / 1000) + ' s';
    return Math.floor(min / 60) + ' h ' + (min % 60) + ' min';
  }

  const clock = (at) => (typeof at === 'number' && Number.isFinite(at) ? new Date(at) : null);

  function setStatus(text, kind) {
    ui.status.textContent = text;
    ui.status.className = 'status ' + kind;
  }

  function showLive(count) {
    if (note && Date.now() < note.until) return setStatus(note.text, note.kind);
    note = null;
    const what = count === 1 ? '1 lock' : count + ' locks';
    setStatus(paused ? 'Paused (' + what + ' at the last update)' : 'Live: ' + what, paused ? 'paused' : 'ok');
  }

  const describe = (err) => (err && typeof err.message === 'string' && err.message.slice(0, 300)) || 'request failed';

  async function failure(res) {
    let detail = '';
    try {
      const answer = await res.json();
      const message = answer && answer.message;
      detail = Array.isArray(message) ? message.join('; ') : typeof message === 'string' ? message : '';
    } catch {
      // Not JSON (a proxy's error page, say): the status line says enough.
    }
    return new Error(res.status + ': ' + (detail || res.statusText || 'request failed'));
  }

  async function request(url, init, controller) {
    let timedOut = false;
    const deadline = setTimeout(() => {
      timedOut = true;
      controller.abort();
    }, TIMEOUT_MS);
    try {
      const res = await fetch(url, Object.assign({ signal: controller.signal, cache: 'no-store' }, init));
      if (!res.ok) throw await failure(res);
      return await res.json();
    } catch (err) {
      if (timedOut) throw new Error('No answer within ' + TIMEOUT_MS / 1000 + ' s');
      if (err instanceof TypeError) throw new Error('Network error: ' + describe(err));
      throw err;
    } finally {
      clearTimeout(deadline);
    }
  }

  // One request at a time: the next poll is set only once the last one has answered or failed.
  function schedule() {
    stopTimer();
    if (paused || document.hidden || inFlight) return;
    timer = setTimeout(poll, POLL_MS);
  }

  function stopTimer() {
    clearTimeout(timer);
    timer = 0;
  }

  function refreshNow() {
    stopTimer();
    poll();
  }

  async function poll() {
    timer = 0;
    if (inFlight) inFlight.abort();
    const controller = new AbortController();
    inFlight = controller;
    const url = base + '/api/locks' + (filter ? '?filter=' + encodeURIComponent(filter) : '');
    try {
      const data = await request(url, { headers: { accept: 'application/json' } }, controller);
      if (inFlight !== controller) return;
      render(data || {});
    } catch (err) {
      if (inFlight !== controller) return;
      setStatus(describe(err), 'error');
    } finally {
      // A request aborted for a newer one leaves the scheduling to that one.
      if (inFlight === controller) {
        inFlight = null;
        schedule();
      }
    }
  }

  function render(data) {
    readOnly = pageReadOnly || data.readOnly === true;
    const now = new Date();
    ui.instance.textContent = data.instance ? String(data.instance) : '?';
    ui.updated.textContent = now.toLocaleTimeString();
    ui.updated.dateTime = now.toISOString();
    const locks = Array.isArray(data.locks) ? data.locks : [];
    for (const old of ui.table.querySelectorAll('tbody')) old.remove();
    ui.table.append(...locks.map((lock) => lockGroup(lock, data.instance)));
    ui.wrap.hidden = locks.length === 0;
    ui.empty.hidden = locks.length !== 0;
    ui.truncated.hidden = !data.truncated;
    ui.truncated.textContent = data.truncated
      ? 'More live locks than the scan limit (' + data.limit + '): only the first are shown. Narrow the filter to see the rest.'
      : '';
    renderRecent(data.recent, data.serverTime);
    showLive(locks.length);
  }

  function holdersOf(lock, instance) {
    if (Array.isArray(lock.holders) && lock.holders.length) return lock.holders;
    if (!given(lock.holder)) return [];
    return [{
      token: lock.holder, instance: lock.holderInstance, ttl: lock.ttl, fence: lock.fence, heldMs: lock.heldMs,
      mine: !!instance && lock.holderInstance === instance, mode: lock.kind === 'read-write' ? lock.mode : null,
    }];
  }

  function lockGroup(lock, instance) {
    const group = el('tbody', 'lock');
    group.setAttribute('data-testid', 'lock-row');
    group.setAttribute('data-key', String(lock.key));
    const holders = holdersOf(lock, instance);
    const queue = Array.isArray(lock.queue) ? lock.queue : [];
    const rows = holders.map((holder) => holderRow(lock, holder));
    if (rows.length === 0) rows.push(freeRow());
    queue.forEach((waiter, index) => rows.push(queueRow(waiter, index + 1)));
    // A quorum's nodes count their waiters but do not list them in one order.
    if (queue.length === 0 && lock.queueLength > 0) rows.push(noteRow(lock.queueLength + ' waiting (this store counts them, it does not list them)'));
    if (Array.isArray(lock.nodes)) rows.push(nodesRow(lock.nodes));
    const key = el('td', 'key');
    key.append(el('code', null, lock.key));
    const kind = kindCell(lock, holders.length);
    key.rowSpan = rows.length;
    kind.rowSpan = rows.length;
    rows[0].prepend(key, kind);
    group.append(...rows);
    return group;
  }

  function kindCell(lock, held) {
    const cell = el('td', 'kind');
    const kind = String(lock.kind || 'mutex');
    cell.append(badge(kind, 'kind ' + (kind === 'semaphore' || kind === 'read-write' ? 'kind-' + kind : 'kind-mutex')));
    if (kind === 'semaphore') cell.append(el('div', 'sub', held + ' of ' + lock.permits + ' permits held'));
    if (kind === 'read-write') {
      const mode = lock.mode === 'read' || lock.mode === 'write' ? lock.mode : null;
      const line = el('div', 'sub');
      line.append(mode ? badge(mode + ' held', 'mode-' + mode) : el('span', 'muted', 'free'));
      cell.append(line);
    }
    if (lock.reserved > 0) cell.append(el('div', 'sub', lock.reserved + ' reserved for the next in line'));
    return cell;
  }

  function identity(instance, mine, mode) {
    const line = el('div', 'identity');
    line.append(el('span', 'instance', given(instance) ? instance : 'unknown instance'));
    if (mine) line.append(' ', badge('this instance', 'mine'));
    if (mode === 'read' || mode === 'write') line.append(' ', badge(mode, 'mode-' + mode));
    return line;
  }

  function holderRow(lock, holder) {
    const row = el('tr', 'holder');
    row.setAttribute('data-testid', 'holder');
    row.setAttribute('data-token', String(holder.token));
    const who = el('td', 'who');
    who.append(identity(holder.instance, holder.mine === true, holder.mode), el('code', 'token', holder.token));
    row.append(who, el('td', 'num', duration(holder.heldMs)), el('td', 'num', duration(holder.ttl)),
      el('td', 'num fence', given(holder.fence) ? holder.fence : DASH), actionCell(lock, holder));
    return row;
  }

  function freeRow() {
    const row = el('tr', 'free');
    row.append(el('td', 'muted', 'free'));
    row.cells[0].colSpan = 5;
    return row;
  }

  function noteRow(text) {
    const row = el('tr', 'note');
    row.append(el('td', 'muted', text));
    row.cells[0].colSpan = 5;
    return row;
  }

  /** A quorum's nodes side by side: each one's own view of the lock, or why it did not answer. */
  function nodesRow(nodes) {
    const row = el('tr', 'nodes');
    const cell = el('td');
    cell.colSpan = 5;
    const list = el('div', 'node-list');
    for (const node of nodes) {
      const item = el('div', 'node');
      item.setAttribute('data-testid', 'node');
      item.append(el('code', null, node.node), ' ');
      if (given(node.error)) item.append(el('span', 'muted', 'no answer: ' + node.error));
      else if (given(node.holder)) item.append(el('span', null, 'held by ' + node.holder + ', ' + duration(node.ttl) + ' left, fence ' + node.fence));
      else item.append(el('span', 'muted', 'free here'));
      if (node.queueLength > 0) item.append(el('span', 'muted', ', ' + node.queueLength + ' waiting'));
      list.append(item);
    }
    cell.append(el('div', 'sub', 'Quorum nodes'), list);
    row.append(cell);
    return row;
  }

  function queueRow(waiter, position) {
    const row = el('tr', 'waiter');
    row.setAttribute('data-testid', 'queue-entry');
    row.setAttribute('data-token', String(waiter.waiter));
    row.setAttribute('data-position', String(position));
    const who = el('td', 'who');
    const line = identity(waiter.instance, waiter.mine === true, waiter.mode);
    line.prepend(el('span', 'position', 'queued #' + position), ' ');
    who.append(line, el('code', 'token', waiter.waiter));
    const inexact = waiter.waitingExact === false;
    const waited = el('td', 'num', (inexact ? AT_LEAST : '') + duration(waiter.waitingMs));
    if (inexact) waited.title = 'At least: how long this board has seen it waiting';
    const rest = el('td');
    rest.colSpan = 3;
    row.append(who, waited, rest);
    return row;
  }

  function actionCell(lock, holder) {
    const cell = el('td', 'action');
    if (readOnly || !given(holder.token)) return cell;
    const button = el('button', 'danger', 'Force release');
    button.type = 'button';
    button.setAttribute('data-testid', 'force-release');
    button.setAttribute('data-token', String(holder.token));
    button.addEventListener('click', () => forceRelease(String(lock.key), String(holder.token), button));
    cell.append(button);
    return cell;
  }

  async function forceRelease(key, token, button) {
    if (readOnly) return;
    const question = 'Force release the lock "' + key + '"?\\n\\nHolder token: ' + token +
      '\\n\\nIf the holder is still working it loses the lock mid-way; release only a holder that is gone.';
    if (!window.confirm(question)) return;
    button.disabled = true;
    const url = base + '/api/locks/' + encodeURIComponent(key) + '/release';
    const init = {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-lock-board': '1', accept: 'application/json' },
      body: JSON.stringify({ token }),
    };
    try {
      const answer = await request(url, init, new AbortController());
      note = answer && answer.released === true
        ? { text: 'Released "' + key + '".', kind: 'ok' }
        : { text: 'Not released: "' + key + '" is no longer held by that token.', kind: 'warn' };
    } catch (err) {
      note = { text: 'Force release failed: ' + describe(err), kind: 'error' };
    }
    note.until = Date.now() + NOTE_MS;
    setStatus(note.text, note.kind);
    button.disabled = false;
    refreshNow();
  }

  function renderRecent(recent, serverTime) {
    const events = (Array.isArray(recent) ? recent.slice() : []).sort((a, b) => (b.at || 0) - (a.at || 0));
    ui.recent.replaceChildren(...events.map((event) => recentEntry(event, serverTime)));
    ui.recentEmpty.hidden = events.length > 0;
  }

  function recentEntry(event, serverTime) {
    const item = el('li', 'recent-entry');
    item.setAttribute('data-testid', 'recent-entry');
    const at = clock(event.at);
    const time = el('time', 'when', at ? at.toLocaleTimeString() : DASH);
    if (at) time.dateTime = at.toISOString();
    if (at && typeof serverTime === 'number') time.title = duration(serverTime - event.at) + ' ago';
    item.append(time, badge(event.kind || 'event', event.kind === 'timeout' ? 'event-timeout' : 'event-lost'));
    if (event.name) item.append(el('span', 'name', event.name));
    for (const key of Array.isArray(event.keys) ? event.keys : []) item.append(el('code', 'key', key));
    const text = event.message || event.reason;
    if (text) item.append(el('div', 'message', text));
    return item;
  }

  ui.filter.addEventListener('input', () => {
    clearTimeout(debounce);
    debounce = setTimeout(() => {
      const next = ui.filter.value.trim();
      if (next === filter) return;
      filter = next;
      // Keeps the filter in the address so that a reload or a shared link shows the same view.
      history.replaceState(null, '', filter ? '?filter=' + encodeURIComponent(filter) : location.pathname);
      refreshNow();
    }, DEBOUNCE_MS);
  });

  ui.pause.addEventListener('click', () => {
    paused = !paused;
    ui.pause.textContent = paused ? 'Resume' : 'Pause';
    ui.pause.setAttribute('aria-pressed', String(paused));
    if (!paused) return refreshNow();
    stopTimer();
    setStatus('Paused', 'paused');
  });

  document.addEventListener('visibilitychange', () => {
    if (document.hidden) stopTimer();
    else if (!paused && !inFlight) refreshNow();
  });

  if (!document.hidden) poll();
})();
`;

/** The stylesheet, served at `${basePath}/board.css` with content-type text/css. */
export const BOARD_STYLE = `:root {
  color-scheme: light;
  --fg: #1f2328; --muted: #59636e; --line: #d1d9e0; --soft: #f6f8fa; --zebra: #fafbfc;
  --err: #cf222e; --err-bg: #ffebe9; --warn: #7d4e00; --warn-bg: #fff8c5; --ok: #1a7f37;
  font-family: system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif;
  font-size: 14px; line-height: 1.45; color: var(--fg); background: #fff;
}
* { box-sizing: border-box; }
[hidden] { display: none !important; }
.node-list { display: flex; flex-wrap: wrap; gap: 4px 16px; margin-top: 2px; }
.node { white-space: nowrap; }
body { margin: 0; }
code, .fence { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, "Liberation Mono", monospace; font-size: 0.92em; }
.sr-only { position: absolute; width: 1px; height: 1px; overflow: hidden; clip-path: inset(50%); white-space: nowrap; }
.muted { color: var(--muted); }
.bar {
  display: flex; flex-wrap: wrap; align-items: flex-end; justify-content: space-between; gap: 8px 24px;
  padding: 14px 24px 10px; background: var(--soft); border-bottom: 1px solid var(--line);
  position: sticky; top: 0; z-index: 1;
}
h1 { margin: 0; font-size: 1.45rem; font-weight: 600; }
.meta { margin: 2px 0 0; color: var(--muted); }
.meta code { color: var(--fg); }
.controls { display: flex; gap: 8px; align-items: center; }
input[type="search"] {
  font: inherit; min-width: 16rem; padding: 5px 9px; border: 1px solid var(--line); border-radius: 6px; background: #fff;
}
input[type="search"]:focus, button:focus-visible { outline: 2px solid #0969da; outline-offset: 1px; }
button {
  font: inherit; padding: 5px 14px; border: 1px solid var(--line); border-radius: 6px; background: #fff;
  color: var(--fg); cursor: pointer;
}
button:hover { background: #eef1f4; }
button:disabled { opacity: 0.55; cursor: default; }
button[aria-pressed="true"] { background: #ddf4ff; border-color: #80ccff; }
button.danger { padding: 2px 9px; font-size: 0.85em; color: var(--err); border-color: #ffb8b8; white-space: nowrap; }
button.danger:hover { background: var(--err-bg); }
.status { flex-basis: 100%; margin: 0; padding: 3px 0; font-size: 0.9em; color: var(--muted); }
.status::before {
  content: ""; display: inline-block; width: 8px; height: 8px; margin-right: 7px; border-radius: 50%;
  background: #afb8c1; vertical-align: 1px;
}
.status.ok::before { background: var(--ok); }
.status.warn { color: var(--warn); } .status.warn::before { background: #d4a72c; }
.status.error { color: var(--err); font-weight: 600; } .status.error::before { background: var(--err); }
main { padding: 16px 24px 40px; }
.notice {
  margin: 0 0 12px; padding: 8px 12px; border: 1px solid #eed888; border-radius: 6px;
  background: var(--warn-bg); color: var(--warn);
}
.table-wrap { position: relative; overflow-x: auto; border: 1px solid var(--line); border-radius: 8px; }
table { width: 100%; border-collapse: collapse; }
th, td { padding: 7px 12px; text-align: left; vertical-align: top; }
thead th {
  background: var(--soft); border-bottom: 1px solid var(--line); color: var(--muted);
  font-size: 0.78em; font-weight: 600; letter-spacing: 0.04em; text-transform: uppercase; white-space: nowrap;
}
tbody.lock { border-top: 1px solid var(--line); }
tbody.lock:first-of-type { border-top: 0; }
tbody.lock:nth-of-type(even) { background: var(--zebra); }
tr.waiter > td, tr.holder + tr.holder > td { border-top: 1px dashed #e4e8ec; }
td.key { min-width: 8rem; max-width: 22rem; }
td.key code { font-weight: 600; overflow-wrap: anywhere; }
.token { display: block; margin-top: 1px; color: var(--muted); font-size: 0.84em; overflow-wrap: anywhere; }
.num { white-space: nowrap; font-variant-numeric: tabular-nums; }
.fence { font-size: 0.88em; line-height: 1.65; }
.sub { margin-top: 4px; color: var(--muted); font-size: 0.85em; }
.position { color: var(--muted); font-size: 0.85em; font-variant-numeric: tabular-nums; }
tr.waiter .instance { color: #424a53; }
td.action { text-align: right; width: 1%; }
.badge {
  display: inline-block; padding: 0 7px; border: 1px solid var(--line); border-radius: 999px;
  background: #fff; color: var(--muted); font-size: 0.78em; line-height: 1.6; white-space: nowrap; vertical-align: 1px;
}
.badge.kind-mutex { color: #424a53; }
.badge.kind-semaphore { color: #1a7f37; border-color: #aceebb; background: #f0fff4; }
.badge.kind-read-write { color: #8250df; border-color: #d8b9ff; background: #fbf7ff; }
.badge.mode-read { color: #0969da; border-color: #b6e3ff; background: #f1f8ff; }
.badge.mode-write { color: #bc4c00; border-color: #ffd1ac; background: #fff8f2; }
.badge.mine { color: #0550ae; border-color: #80ccff; background: #ddf4ff; font-weight: 600; }
.badge.event-timeout { color: var(--warn); border-color: #eed888; background: var(--warn-bg); }
.badge.event-lost { color: var(--err); border-color: #ffcecb; background: var(--err-bg); }
.empty {
  margin: 0; padding: 28px; border: 1px dashed var(--line); border-radius: 8px; text-align: center; color: var(--muted);
}
.recent h2 { margin: 28px 0 8px; font-size: 1rem; font-weight: 600; }
.recent-list { margin: 0; padding: 0; list-style: none; border: 1px solid var(--line); border-radius: 8px; }
.recent-list:empty { display: none; }
.recent-entry {
  display: flex; flex-wrap: wrap; align-items: baseline; gap: 4px 8px; padding: 7px 12px; border-top: 1px solid var(--line);
}
.recent-entry:first-child { border-top: 0; }
.recent-entry .when { color: var(--muted); font-variant-numeric: tabular-nums; }
.recent-entry .name { font-weight: 600; }
.recent-entry .key { overflow-wrap: anywhere; }
.recent-entry .message { flex-basis: 100%; color: var(--muted); }
@media (max-width: 700px) {
  .bar { padding: 10px 12px 8px; }
  main { padding: 12px 12px 32px; }
  .controls { flex: 1 1 100%; }
  input[type="search"] { flex: 1; min-width: 0; }
  th, td { padding: 6px 8px; }
}
`;
