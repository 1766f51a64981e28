// @ts-check
/**
 * The live app board's script (docs/board.md), served as is at `GET /board/app.js`: one ES2020
 * module, no imports, no build step. The types are JSDoc, checked by `tsc -p tsconfig.board.json`
 * (`node scripts/test.mjs typecheck`) against the DOM only; the served bytes are this file's
 * (embedded by scripts/gen-board.mjs as ./client.gen.ts, so no runtime reads a file).
 * Uncaught errors are caught by loading it in headless Chromium (tests/board.test.ts).
 */

// ---- types ----------------------------------------------------------------------------------
// What the page reads off the wire (docs/protocol.md). It is JSON from the server, so every
// field is optional and the code below defaults each one.
/** @typedef {{ org?: string, project?: string, domain?: string, name?: string }} AppId */
/** @typedef {{ deploymentStatus?: string, message?: string, lastTransitionTime?: string }} Condition */
/**
 * @typedef {object} AppStatus
 * @property {Condition[]} [conditions]
 * @property {string} [lastUpdatedAt]
 * @property {string} [createdAt]
 * @property {number} [currentReplicas]
 * @property {{ publicUrl?: unknown }} [ingress]
 */
/** @typedef {{ metadata?: { id?: AppId }, status?: AppStatus }} App */
/** @typedef {{ mode?: string, apps?: number, sandbox?: boolean, resumeFailed?: string }} Start */
/**
 * One stream frame: exactly one of the events, or `start` / `synced` / `heartbeat` / `error`.
 * @typedef {object} Frame
 * @property {Start} [start]
 * @property {{ app?: App }} [createEvent]
 * @property {{ updatedApp?: App }} [updateEvent]
 * @property {{ app?: App }} [deleteEvent]
 * @property {{ resume?: unknown }} [synced]
 * @property {{ resume?: unknown }} [heartbeat]
 * @property {{ message?: string, code?: string }} [error]
 * @property {unknown} [resume]
 */
/** @typedef {{ cluster?: { name?: unknown, organization?: unknown, host?: unknown, namespaces?: unknown }, sandbox?: unknown }} Info GET v1/info */

/**
 * One app as the board shows it; `el` and `cells` once its table row is built.
 * @typedef {object} Row
 * @property {string} key org/project/domain/name
 * @property {string} org
 * @property {string} project
 * @property {string} domain
 * @property {string} name
 * @property {string} phase the last condition's, without DEPLOYMENT_STATUS_
 * @property {string} message
 * @property {string} url "" unless http(s)
 * @property {number} replicas
 * @property {string} created ISO time or ""
 * @property {string} changed ISO time or ""
 * @property {HTMLTableRowElement | null} el
 * @property {Cells | null} cells
 * @property {boolean} dirty the row's cells need a patch
 * @property {boolean} [flashed] a change to highlight at the next patch
 * @property {string} search the key, lower case
 * @property {string} sig what a change must differ in to count
 */
/**
 * @typedef {object} Cells A built row's cells
 * @property {HTMLSpanElement} badge
 * @property {HTMLTableCellElement} message
 * @property {HTMLTableCellElement} url
 * @property {HTMLTableCellElement} replicas
 * @property {HTMLTimeElement} age
 * @property {HTMLTimeElement} changed
 * @property {string | null} u the URL the url cell shows
 */
/** @typedef {"name" | "phase" | "changed"} SortKey */
/** @typedef {{ q: string, project: string, domain: string, phase: string }} Filters */
/**
 * The page's elements (the ids of ./page.ts's HTML).
 * @typedef {object} Ui
 * @property {HTMLDivElement} conn
 * @property {HTMLSpanElement} connText
 * @property {HTMLDivElement} notice
 * @property {HTMLParagraphElement} noticeText
 * @property {HTMLButtonElement} noticeClose
 * @property {HTMLFormElement} tokenForm
 * @property {HTMLInputElement} tokenInput
 * @property {HTMLUListElement} counts
 * @property {HTMLFormElement} filters
 * @property {HTMLInputElement} search
 * @property {HTMLSelectElement} project
 * @property {HTMLSelectElement} domain
 * @property {HTMLSelectElement} phase
 * @property {HTMLParagraphElement} shown
 * @property {HTMLTableSectionElement} rows
 * @property {HTMLParagraphElement} empty
 * @property {HTMLButtonElement} more
 * @property {HTMLButtonElement} all
 * @property {HTMLTableElement} table
 * @property {HTMLTableCaptionElement} caption
 * @property {HTMLParagraphElement} stale
 * @property {HTMLSelectElement} sort
 * @property {HTMLSpanElement} whereSandbox
 * @property {HTMLElement} whereCluster
 * @property {HTMLElement} whereNs
 */
/**
 * What the page exposes as `window.appwatchBoard` (read by tests and bench/board.ts).
 * @typedef {object} Stats
 * @property {number} frames
 * @property {number} handleMs time spent handling frames
 * @property {number} connects
 * @property {number} snapshots
 * @property {number} resumed
 * @property {string} resumeFailed
 * @property {number} [snapshotHandleMs]
 * @property {number} [snapshotMs]
 * @property {number} [snapshotApps]
 * @property {number} [renderMs]
 * @property {number} [paintedMs]
 */

const PAGE = 200;
const PHASE_ORDER = ["ACTIVE", "DEPLOYING", "PENDING", "ASSIGNED", "STARTED", "SCALING_UP", "SCALING_DOWN", "FAILED", "STOPPED", "UNASSIGNED", "UNSPECIFIED"];
const TOKEN_KEY = "appwatch.token";
/** @param {string} id */
const byId = (id) => document.getElementById(id);
// The ids are the HTML's (./page.ts); a missing one fails the browser test at the first use.
const ui = /** @type {Ui} */ ({
  conn: byId("conn"), connText: byId("conn-text"), notice: byId("notice"), noticeText: byId("notice-text"),
  noticeClose: byId("notice-close"), tokenForm: byId("token-form"), tokenInput: byId("token-input"),
  counts: byId("counts"), filters: byId("filters"), search: byId("f-search"), project: byId("f-project"),
  domain: byId("f-domain"), phase: byId("f-phase"), shown: byId("shown"), rows: byId("rows"),
  empty: byId("empty"), more: byId("more"), all: byId("show-all"),
  table: byId("apps"), caption: byId("apps-caption"), stale: byId("stale"), sort: byId("f-sort"),
  whereSandbox: byId("w-sandbox"), whereCluster: byId("w-cluster"), whereNs: byId("w-ns"),
});
// What a phase means when the header sorts by phase: trouble first.
const PHASE_RANK = ["FAILED", "DEPLOYING", "PENDING", "ASSIGNED", "STARTED", "SCALING_UP", "SCALING_DOWN", "ACTIVE", "STOPPED", "UNASSIGNED", "UNSPECIFIED"];
// Messages appwatch (like Flyte) puts on a Knative condition that came without reason or message.
const PLACEHOLDERS = ["Configuration is ready", "Routes are ready", "Service is ready"];

// ---- state ----------------------------------------------------------------------------------
/** @type {Map<string, Row>} */
let apps = new Map();        // key -> row (what the board shows)
/** @type {Row[]} */
let order = [];              // rows sorted by key
/** @type {Map<string, Row> | null} */
let incoming = null;         // Map filled by a snapshot, swapped in at "synced"
let expected = 0;            // snapshot size announced by "start"
let resumeToken = "";        // last token received after a sync
let everSynced = false;
/** @type {WebSocket | null} */
let ws = null;
let attempt = 0;
let lastFrameAt = 0;
let lastGoodAt = 0;          // last frame applied to a consistent board (the stale banner's time)
let sandbox = false;         // the server says its data is the sandbox's demo apps
let limit = PAGE;
let token = readToken();
/** @type {Map<Row, number>} */
const flashing = new Map();  // row -> time it was flashed
/** @type {Set<Row>} */
const dirty = new Set();
let need = { list: true, counts: true, options: true, status: true };
let scheduled = false;
/** @type {{ firstFrame: boolean, pending: boolean, done?: boolean }} */
let perf = { firstFrame: false, pending: false };
/** @type {Stats} */
const stats = { frames: 0, handleMs: 0, connects: 0, snapshots: 0, resumed: 0, resumeFailed: "" };
/** @type {Window & { appwatchBoard?: Stats }} */ (window).appwatchBoard = stats; // read by tests and the benchmark

// ---- token ----------------------------------------------------------------------------------
function readToken() {
  const m = /(?:^#|&)token=([^&]*)/.exec(location.hash);
  if (m) {
    const t = decodeURIComponent(/** @type {string} */ (m[1])); // the group always matches
    try { sessionStorage.setItem(TOKEN_KEY, t); } catch (e) { /* storage off */ }
    history.replaceState(null, "", location.pathname + location.search);
    return t;
  }
  try { return sessionStorage.getItem(TOKEN_KEY) || ""; } catch (e) { return ""; }
}

// ---- model ----------------------------------------------------------------------------------
// Control, bidirectional and zero-width characters, shown as \uXXXX so a name cannot reorder or
// hide what the board shows (the same set as src/visible.ts; this file is served as is).
const INVISIBLE = /[\u0000-\u001F\u007F-\u009F\u061C\u200B-\u200F\u2028-\u202E\u2060-\u2069\uFEFF]/g;
/** @param {string} s @returns {string} */
function visible(s) {
  return s.replace(INVISIBLE, (c) => "\\u" + c.charCodeAt(0).toString(16).toUpperCase().padStart(4, "0"));
}
/** An identity part as shown: escaped, and an empty one as "" (Flyte keeps an app-id of "//" as empty parts). @param {string | undefined} s */
function shownPart(s) {
  return s ? visible(s) : '""';
}

/** @param {AppId} id */
function keyOf(id) {
  return (id.org || "") + "/" + (id.project || "") + "/" + (id.domain || "") + "/" + (id.name || "");
}

/** @param {Condition | undefined} c */
const phaseOf = (c) => String((c && c.deploymentStatus) || "DEPLOYMENT_STATUS_UNSPECIFIED").replace(/^DEPLOYMENT_STATUS_/, "");
/** @param {Condition | undefined} c */
const isReal = (c) => c && typeof c.message === "string" && c.message !== "" && PLACEHOLDERS.indexOf(c.message) < 0;

/**
 * The message of the condition that decides the phase. The phase is the last condition's. A
 * True condition reads DEPLOYING only while the service is not Ready, so for DEPLOYING the reason
 * is a condition that is not True (PENDING or FAILED: Ready, or what holds it back), not the last
 * one's "Routes are ready". Otherwise: the last condition of that phase with a real message.
 * Placeholders are the last resort.
 * @param {Condition[]} conds
 * @param {string} phase
 * @returns {string}
 */
function decidingMessage(conds, phase) {
  /** @param {(c: Condition) => unknown} pred @returns {string | undefined} */
  const lastWith = (pred) => { for (let i = conds.length - 1; i >= 0; i--) if (pred(/** @type {Condition} */ (conds[i]))) return /** @type {Condition} */ (conds[i]).message; return ""; };
  const last = conds.length ? /** @type {Condition} */ (conds[conds.length - 1]) : {};
  /** @type {string | undefined} */
  let m = "";
  if (phase === "DEPLOYING") m = lastWith((c) => isReal(c) && (phaseOf(c) === "PENDING" || phaseOf(c) === "FAILED"));
  if (!m) m = lastWith((c) => isReal(c) && phaseOf(c) === phase);
  return m || last.message || "";
}

/** @param {App | undefined} app @returns {Row} */
function toRow(app) {
  const id = (app && app.metadata && app.metadata.id) || {};
  const st = (app && app.status) || {};
  const conds = Array.isArray(st.conditions) ? st.conditions : [];
  const last = conds.length ? conds[conds.length - 1] : {};
  const phase = phaseOf(last);
  let changed = st.lastUpdatedAt || "";
  for (const c of conds) if (c && c.lastTransitionTime && c.lastTransitionTime > changed) changed = c.lastTransitionTime;
  const url = st.ingress && typeof st.ingress.publicUrl === "string" && /^https?:\/\//i.test(st.ingress.publicUrl) ? st.ingress.publicUrl : "";
  const row = /** @type {Row} */ ({
    key: keyOf(id), org: id.org ? visible(id.org) : "", project: shownPart(id.project), domain: shownPart(id.domain), name: shownPart(id.name),
    phase, message: visible(decidingMessage(conds, phase)), url, replicas: Number(st.currentReplicas || 0),
    created: st.createdAt || "", changed, el: null, cells: null, dirty: true,
  }); // search and sig next
  row.search = row.key.toLowerCase();
  row.sig = row.phase + "\n" + row.message + "\n" + row.url + "\n" + row.replicas + "\n" + row.changed;
  return row;
}

/** @param {Row} a @param {Row} b */
function cmp(a, b) { return a.key < b.key ? -1 : a.key > b.key ? 1 : 0; }

/** The header's sort: "name" (the key), "phase" (trouble first), "changed" (latest first); ties by key. */
/** @returns {SortKey} */
function sortBy() { return /** @type {SortKey} */ (ui.sort.value) || "name"; }
/** @param {string} p */
function rank(p) { const i = PHASE_RANK.indexOf(p); return i < 0 ? PHASE_RANK.length : i; }
/** @param {SortKey} by @returns {(a: Row, b: Row) => number} */
function sortCmp(by) {
  if (by === "phase") return (a, b) => rank(a.phase) - rank(b.phase) || cmp(a, b);
  if (by === "changed") return (a, b) => (a.changed < b.changed ? 1 : a.changed > b.changed ? -1 : cmp(a, b));
  return cmp;
}

/** Where `key` is or would go in `order`. @param {string} key */
function indexOf(key) {
  let lo = 0, hi = order.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (/** @type {Row} */ (order[mid]).key < key) lo = mid + 1; else hi = mid;
  }
  return lo;
}

/** @param {App | undefined} app @param {boolean} live */
function upsert(app, live) {
  const row = toRow(app);
  if (incoming) { incoming.set(row.key, row); return; }
  const old = apps.get(row.key);
  if (old) {
    if (old.sig === row.sig) return;
    if (old.phase !== row.phase) { need.counts = true; if (ui.phase.value || sortBy() === "phase") need.list = true; }
    if (old.changed !== row.changed && sortBy() === "changed") need.list = true;
    Object.assign(old, { phase: row.phase, message: row.message, url: row.url, replicas: row.replicas, created: row.created, changed: row.changed, sig: row.sig, dirty: true });
    dirty.add(old);
    if (live) flash(old);
  } else {
    apps.set(row.key, row);
    order.splice(indexOf(row.key), 0, row);
    need.list = need.counts = need.options = true;
    if (live) flash(row);
  }
}

/** @param {App | undefined} app */
function remove(app) {
  const key = keyOf((app && app.metadata && app.metadata.id) || {});
  if (incoming) { incoming.delete(key); return; }
  const row = apps.get(key);
  if (!row) return;
  apps.delete(key);
  const i = indexOf(key);
  if (order[i] === row) order.splice(i, 1);
  flashing.delete(row);
  dirty.delete(row);
  if (row.el) row.el.remove();
  row.el = null;
  need.list = need.counts = need.options = true;
}

/** Swaps in a completed snapshot, reusing the DOM rows of apps that are still there. */
/** @param {Map<string, Row>} next */
function replaceAll(next) {
  flashing.clear();
  dirty.clear();
  for (const row of next.values()) {
    const old = apps.get(row.key);
    if (old && old.el) {
      row.el = old.el; row.cells = old.cells; row.dirty = true;
      if (everSynced && old.sig !== row.sig) flash(row);
    }
  }
  for (const old of apps.values()) if (!next.has(old.key) && old.el) old.el.remove();
  apps = next;
  order = Array.from(next.values()).sort(cmp);
  need = { list: true, counts: true, options: true, status: true };
}

/** @param {Row} row */
function flash(row) { flashing.set(row, performance.now()); row.flashed = true; dirty.add(row); }

// ---- stream ---------------------------------------------------------------------------------
function watchUrl() {
  const u = new URL("v1/watch", location.href);
  u.protocol = location.protocol === "https:" ? "wss:" : "ws:";
  u.hash = "";
  u.search = "";
  if (resumeToken) u.searchParams.set("resume", resumeToken);
  if (token) u.searchParams.set("access_token", token);
  return u.href;
}

function connect() {
  if (ws) return;
  stats.connects++;
  setConn(attempt ? "reconnecting" : "connecting", attempt ? "Reconnecting…" : "Connecting…");
  const sock = new WebSocket(watchUrl());
  ws = sock;
  let opened = false;
  sock.onopen = () => { opened = true; lastFrameAt = Date.now(); setConn("syncing", "Connected, loading…"); loadInfo(); };
  sock.onmessage = (e) => {
    if (ws !== sock) return;
    if (!perf.firstFrame) { perf.firstFrame = true; performance.mark("board:first-frame"); }
    const t0 = performance.now();
    lastFrameAt = Date.now();
    stats.frames++;
    let f;
    try { f = JSON.parse(e.data); } catch (err) { return; }
    onFrame(f);
    if (everSynced && !incoming) lastGoodAt = lastFrameAt;
    schedule();
    stats.handleMs += performance.now() - t0;
  };
  sock.onclose = (e) => {
    if (ws !== sock) return;
    ws = null;
    incoming = null; // an unfinished snapshot is dropped; the board keeps what it had
    schedule();
    afterClose(opened, e.code, e.reason);
  };
}

/** @param {Frame} f */
function onFrame(f) {
  if (f.start) return onStart(f.start);
  if (f.createEvent) upsert(f.createEvent.app, f.resume !== undefined);
  else if (f.updateEvent) upsert(f.updateEvent.updatedApp, true);
  else if (f.deleteEvent) remove(f.deleteEvent.app);
  else if (f.synced) onSynced(f.synced);
  else if (f.error) setNotice("The server ended the stream: " + (f.error.message || f.error.code || "error") + ". Reconnecting.");
  const t = f.resume !== undefined ? f.resume : f.heartbeat ? f.heartbeat.resume : undefined;
  if (typeof t === "string" && !incoming) resumeToken = t;
  if (incoming) need.status = true;
}

/** @param {Start} s */
function onStart(s) {
  need.status = true;
  setSandbox(s.sandbox === true);
  if (s.mode === "snapshot") {
    incoming = new Map();
    expected = Number(s.apps || 0);
    stats.snapshots++;
    if (everSynced) {
      stats.resumeFailed = s.resumeFailed || "none";
      const why = s.resumeFailed ? "the server could not resume the stream (" + s.resumeFailed + ")" : "the server sent a fresh snapshot";
      setNotice("Reconnected at " + clock(new Date()) + ": " + why + ", so the board was rebuilt from a new snapshot.");
    }
  } else {
    incoming = null;
    if (s.mode === "resumed") stats.resumed++;
  }
}

/** @param {{ resume?: unknown }} s */
function onSynced(s) {
  if (incoming) {
    replaceAll(incoming);
    incoming = null;
    perf.pending = !perf.done;
    if (perf.pending) { performance.mark("board:synced"); stats.snapshotHandleMs = stats.handleMs; }
  }
  if (typeof s.resume === "string") resumeToken = s.resume;
  everSynced = true;
  attempt = 0;
  setConn("live", "Live");
  need.status = true;
}

/** @param {boolean} opened @param {number} code @param {string} reason */
function afterClose(opened, code, reason) {
  if (!opened) {
    // The handshake failed: find out whether a token is missing or wrong.
    fetch(new URL("v1/apps?limit=1", location.href), { headers: token ? { authorization: "Bearer " + token } : {} })
      .then((r) => { if (r.status === 401) askToken(); else retry(); }, () => retry());
    setConn("reconnecting", "Disconnected, retrying…");
    return;
  }
  const why = code === 1001 ? "server restarting" : code === 1013 ? "server asked to reconnect" : "connection lost";
  setConn("reconnecting", "Disconnected (" + why + "), reconnecting…");
  retry(code === 1001 ? 250 : 0);
}

/** @type {number | ReturnType<typeof setTimeout>} */ // a number here; `deno check` sees Node's setTimeout too
let retryTimer = 0;
/** @param {number} [min] the least delay, ms */
function retry(min) {
  clearTimeout(retryTimer);
  const base = Math.max(min || 0, Math.min(10000, 250 * Math.pow(2, attempt)));
  attempt++;
  const delay = Math.round(base * (1 + Math.random() * 0.25));
  setConn("reconnecting", "Disconnected, retrying in " + Math.ceil(delay / 1000) + " s…");
  retryTimer = setTimeout(connect, delay);
}

function askToken() {
  setConn("auth", token ? "The token was refused" : "A token is required");
  ui.tokenForm.hidden = false;
  ui.tokenInput.focus();
}

ui.tokenForm.addEventListener("submit", (e) => {
  e.preventDefault();
  token = ui.tokenInput.value.trim();
  try { sessionStorage.setItem(TOKEN_KEY, token); } catch (err) { /* storage off */ }
  ui.tokenInput.value = "";
  ui.tokenForm.hidden = true;
  attempt = 0;
  connect();
});

window.addEventListener("hashchange", () => {
  if (!/token=/.test(location.hash)) return;
  token = readToken();
  if (ws) ws.close(1000); else connect();
});

// Liveness: ping every 15 s; a socket silent for 45 s is dead (the next connect resumes).
setInterval(() => {
  if (!ws || ws.readyState !== 1) return;
  if (Date.now() - lastFrameAt > 45000) { ws.close(4000, "no frames"); return; }
  try { ws.send('{"ping":{}}'); } catch (e) { /* closing */ }
}, 15000);

// ---- rendering ------------------------------------------------------------------------------
function schedule() {
  if (scheduled) return;
  scheduled = true;
  requestAnimationFrame(flush);
}

function flush() {
  scheduled = false;
  if (need.counts) renderCounts();
  if (need.options) renderOptions();
  if (need.list) renderList();
  else {
    for (const row of dirty) if (row.el && row.el.isConnected) patch(row);
  }
  dirty.clear();
  if (need.status) renderStatus();
  need = { list: false, counts: false, options: false, status: false };
  sweepFlashes();
  if (perf.pending) {
    perf.pending = false;
    perf.done = true;
    void ui.rows.offsetHeight; // layout included
    performance.mark("board:snapshot-rendered");
    const m = performance.measure("board:snapshot", "board:first-frame", "board:snapshot-rendered");
    stats.snapshotMs = m.duration;
    stats.snapshotApps = apps.size;
    stats.renderMs = performance.measure("board:render", "board:synced", "board:snapshot-rendered").duration;
    requestAnimationFrame(() => {
      performance.mark("board:snapshot-painted");
      stats.paintedMs = performance.measure("board:snapshot-painted", "board:first-frame", "board:snapshot-painted").duration;
    });
  }
}

/** @returns {Filters} */
function filters() {
  return { q: ui.search.value.trim().toLowerCase(), project: ui.project.value, domain: ui.domain.value, phase: ui.phase.value };
}

/** @param {Row} row @param {Filters} f */
function matches(row, f) {
  return (!f.project || row.project === f.project) && (!f.domain || row.domain === f.domain) &&
    (!f.phase || row.phase === f.phase) && (!f.q || row.search.indexOf(f.q) >= 0);
}

let matchedCount = 0;
/** @type {Record<SortKey, string>} */
const SORT_CAPTION = { name: "sorted by org, project, domain and name", phase: "sorted by phase (failed and deploying first), then name", changed: "sorted by last change, latest first" };
function renderList() {
  const f = filters();
  const by = sortBy();
  let shown = [];
  let n = 0;
  if (by === "name") {
    for (const row of order) {
      if (!matches(row, f)) continue;
      if (n++ < limit) shown.push(row);
    }
  } else {
    const all = order.filter((row) => matches(row, f));
    n = all.length;
    shown = all.sort(sortCmp(by)).slice(0, limit);
  }
  matchedCount = n;
  ui.caption.textContent = "Flyte apps, one row per app, " + SORT_CAPTION[by];
  for (const th of /** @type {NodeListOf<HTMLTableCellElement>} */ (ui.table.querySelectorAll("th[data-sort]"))) {
    if (th.dataset.sort === by) th.setAttribute("aria-sort", by === "changed" ? "descending" : "ascending");
    else th.removeAttribute("aria-sort");
  }
  const tb = ui.rows;
  let cur = tb.firstChild;
  for (const row of shown) {
    if (!row.el) build(row); else if (row.dirty) patch(row);
    // row.el is built now (tsc keeps the narrowing to null across build()).
    if (cur === row.el) cur = /** @type {ChildNode} */ (cur).nextSibling; else tb.insertBefore(/** @type {HTMLTableRowElement} */ (row.el), cur);
  }
  while (cur) { const next = cur.nextSibling; tb.removeChild(cur); cur = next; }
  ui.empty.hidden = n > 0 || incoming !== null || !everSynced;
  ui.empty.textContent = apps.size ? "No apps match the filters." : "No apps yet.";
  const rest = n - shown.length;
  ui.more.hidden = rest <= 0;
  ui.all.hidden = rest <= PAGE;
  ui.more.textContent = "Show " + Math.min(PAGE, rest) + " more";
  ui.all.textContent = "Show all " + n;
  need.status = true;
}

/** @param {HTMLTableRowElement} tr @param {string} cls @param {string} label */
function cell(tr, cls, label) {
  const td = document.createElement("td");
  td.className = cls;
  if (label) td.dataset.label = label;
  tr.appendChild(td);
  return td;
}

/** @param {Row} row */
function build(row) {
  const tr = document.createElement("tr");
  tr.dataset.key = row.key;
  const app = cell(tr, "app", "");
  const name = document.createElement("div");
  name.className = "name";
  name.textContent = row.name;
  const path = document.createElement("div");
  path.className = "path";
  path.textContent = row.org + " / " + row.project + " / " + row.domain;
  app.append(name, path);
  const phase = cell(tr, "phase", "");
  const badge = document.createElement("span");
  phase.appendChild(badge);
  const message = cell(tr, "msg", "");
  const url = cell(tr, "url", "");
  const replicas = cell(tr, "num replicas", "Replicas");
  const age = document.createElement("time");
  cell(tr, "age", "Age").appendChild(age);
  const changed = document.createElement("time");
  cell(tr, "changed", "Changed").appendChild(changed);
  row.el = tr;
  row.cells = { badge, message, url, replicas, age, changed, u: null };
  patch(row);
}

/** @param {Row} row a built one (`el` and `cells` set) */
function patch(row) {
  const c = /** @type {Cells} */ (row.cells);
  row.dirty = false;
  const badgeClass = "badge p-" + row.phase;
  if (c.badge.className !== badgeClass) c.badge.className = badgeClass;
  if (c.badge.textContent !== row.phase) c.badge.textContent = row.phase;
  if (c.message.textContent !== row.message) c.message.textContent = row.message;
  if (c.u !== row.url) {
    c.u = row.url;
    c.url.textContent = "";
    if (row.url) {
      const a = document.createElement("a");
      a.href = row.url;
      a.rel = "noopener noreferrer";
      a.target = "_blank";
      a.textContent = visible(row.url.replace(/^https?:\/\//i, ""));
      c.url.appendChild(a);
    }
  }
  const r = String(row.replicas);
  if (c.replicas.textContent !== r) c.replicas.textContent = r;
  setTime(c.age, row.created, age(row.created));
  setTime(c.changed, row.changed, row.changed ? when(row.changed) : "—");
  if (row.flashed) {
    row.flashed = false;
    const a = /** @type {HTMLTableRowElement} */ (row.el).classList.contains("flash-a");
    /** @type {HTMLTableRowElement} */ (row.el).classList.remove(a ? "flash-a" : "flash-b");
    /** @type {HTMLTableRowElement} */ (row.el).classList.add(a ? "flash-b" : "flash-a");
  }
}

/** @param {HTMLTimeElement} el @param {string} iso @param {string} text */
function setTime(el, iso, text) {
  if (el.textContent !== text) el.textContent = text;
  if (iso && el.dateTime !== iso) { el.dateTime = iso; el.title = new Date(iso).toLocaleString(); }
}

function sweepFlashes() {
  if (!flashing.size) return;
  const now = performance.now();
  for (const [row, at] of flashing) {
    if (now - at < 1600) continue;
    flashing.delete(row);
    if (row.el) row.el.classList.remove("flash-a", "flash-b");
  }
  if (flashing.size) setTimeout(schedule, 400);
}

function renderCounts() {
  /** @type {Map<string, number>} */
  const counts = new Map();
  for (const row of apps.values()) counts.set(row.phase, (counts.get(row.phase) || 0) + 1);
  const phases = PHASE_ORDER.filter((p) => counts.has(p));
  const active = ui.phase.value;
  /** @typedef {[value: string, label: string, n: number]} Item */
  const items = [/** @type {Item} */ (["", "All", apps.size])].concat(phases.map((p) => /** @type {Item} */ ([p, p, counts.get(p)])));
  const frag = document.createDocumentFragment();
  for (const [value, label, n] of items) {
    const li = document.createElement("li");
    const b = document.createElement("button");
    b.type = "button";
    b.className = value ? "badge p-" + value : "badge";
    b.dataset.phase = value;
    b.setAttribute("aria-pressed", String(active === value));
    const l = document.createElement("span");
    l.textContent = label;
    const c = document.createElement("span");
    c.className = "n";
    c.textContent = String(n);
    b.append(l, c);
    b.title = value ? "Show only " + label + " apps" : "Show apps in every phase";
    li.appendChild(b);
    frag.appendChild(li);
  }
  ui.counts.replaceChildren(frag);
  const known = new Set(PHASE_ORDER.concat(phases));
  setOptions(ui.phase, Array.from(known), "All phases");
}

function renderOptions() {
  const projects = new Set();
  const domains = new Set();
  for (const row of order) { projects.add(row.project); domains.add(row.domain); }
  setOptions(ui.project, Array.from(projects).sort(), "All projects");
  setOptions(ui.domain, Array.from(domains).sort(), "All domains");
}

/** @param {HTMLSelectElement} select @param {string[]} values @param {string} allLabel */
function setOptions(select, values, allLabel) {
  const current = select.value;
  if (current && values.indexOf(current) < 0) values.push(current); // keep a chosen value that has gone
  const sig = values.join("\n");
  if (select.dataset.sig === sig) return;
  select.dataset.sig = sig;
  const frag = document.createDocumentFragment();
  frag.appendChild(new Option(allLabel, ""));
  for (const v of values) frag.appendChild(new Option(v, v));
  select.replaceChildren(frag);
  select.value = current;
}

function renderStatus() {
  if (incoming) {
    ui.shown.textContent = "Loading snapshot… " + incoming.size + " of " + expected + " apps";
    return;
  }
  if (!everSynced) { ui.shown.textContent = ""; return; }
  const rendered = ui.rows.childElementCount;
  ui.shown.textContent = matchedCount === apps.size
    ? (rendered < matchedCount ? "Showing " + rendered + " of " + apps.size + " apps" : apps.size + " apps")
    : (rendered < matchedCount ? "Showing " + rendered + " of " + matchedCount + " matching apps (" + apps.size + " in all)" : matchedCount + " of " + apps.size + " apps match");
}

/** @param {string} state @param {string} text */
function setConn(state, text) {
  ui.conn.dataset.state = state;
  if (ui.connText.textContent !== text) ui.connText.textContent = text;
  renderStale();
}

/** While not live after a sync, the rows are what the server said last: dimmed, with that time. */
function renderStale() {
  const stale = everSynced && ui.conn.dataset.state !== "live";
  ui.table.classList.toggle("is-stale", stale);
  ui.stale.hidden = !stale;
  if (stale) {
    const at = lastGoodAt ? new Date(lastGoodAt) : null;
    ui.stale.textContent = "Disconnected: the rows below may be out of date" + (at ? "; last update from the server at " + clock(at) + (at.toDateString() === new Date().toDateString() ? "" : " on " + at.toLocaleDateString()) : "") + ".";
  }
}

/** @param {boolean} on */
function setSandbox(on) {
  if (on) sandbox = true; // once the server says so, the page keeps saying so
  ui.whereSandbox.hidden = !sandbox;
  document.body.classList.toggle("sandbox-mode", sandbox);
  const title = "appwatch: Flyte apps";
  document.title = sandbox ? "[SANDBOX] " + title : title;
}

/** The header's cluster, namespaces and sandbox mode, from GET v1/info (behind the same token). */
function loadInfo() {
  fetch(new URL("v1/info", location.href), { headers: token ? { authorization: "Bearer " + token } : {} })
    .then((r) => (r.ok ? r.json() : {}), () => null) // an older server without v1/info: "unknown"
    .then((/** @type {Info | null} */ info) => {
      if (!info || typeof info !== "object") return;
      const c = info.cluster || {};
      const host = c.host ? String(c.host) : "unknown";
      // A named cluster (--cluster-name, --cluster-org): "acme/east (10.0.0.1:6443)".
      const name = typeof c.name === "string" && c.name ? (typeof c.organization === "string" && c.organization ? c.organization + "/" : "") + c.name : "";
      ui.whereCluster.textContent = name ? name + " (" + host + ")" : host;
      const ns = Array.isArray(c.namespaces) ? c.namespaces.map(String) : [];
      ui.whereNs.textContent = ns.length === 1 && ns[0] === "*" ? "all" : ns.join(", ") || "unknown";
      setSandbox(info.sandbox === true);
    }, () => {});
}

/** @param {string} text */
function setNotice(text) {
  ui.noticeText.textContent = text;
  ui.notice.hidden = false;
}
ui.noticeClose.addEventListener("click", () => { ui.notice.hidden = true; });

// ---- times ----------------------------------------------------------------------------------
/** @param {string} iso */
function age(iso) {
  if (!iso) return "—";
  const s = Math.max(0, (Date.now() - Date.parse(iso)) / 1000);
  if (!isFinite(s)) return "—";
  if (s < 60) return Math.floor(s) + "s";
  if (s < 3600) return Math.floor(s / 60) + "m";
  if (s < 86400) return Math.floor(s / 3600) + "h";
  return Math.floor(s / 86400) + "d";
}
/** @param {Date} d */
function clock(d) { return d.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit", second: "2-digit" }); }
/** @param {string} iso */
function when(iso) {
  const d = new Date(iso);
  if (isNaN(d.getTime())) return "—";
  return d.toDateString() === new Date().toDateString() ? clock(d) : d.toLocaleDateString([], { year: "numeric", month: "short", day: "numeric" }) + " " + clock(d);
}
// Ages and "today" change with time: refresh the rendered rows' times every 10 s.
setInterval(() => {
  for (const tr of /** @type {HTMLCollectionOf<HTMLTableRowElement>} */ (ui.rows.children)) {
    const row = apps.get(/** @type {string} */ (tr.dataset.key));
    if (row) { setTime(/** @type {Cells} */ (row.cells).age, row.created, age(row.created)); setTime(/** @type {Cells} */ (row.cells).changed, row.changed, row.changed ? when(row.changed) : "—"); }
  }
}, 10000);

// ---- controls -------------------------------------------------------------------------------
function refilter() { limit = PAGE; need.list = true; need.counts = true; schedule(); }
ui.search.addEventListener("input", refilter);
ui.project.addEventListener("change", refilter);
ui.domain.addEventListener("change", refilter);
ui.phase.addEventListener("change", refilter);
ui.sort.addEventListener("change", refilter);
ui.filters.addEventListener("submit", (e) => e.preventDefault());
ui.filters.addEventListener("reset", () => setTimeout(refilter, 0));
ui.counts.addEventListener("click", (e) => {
  const b = /** @type {HTMLButtonElement | null} */ (/** @type {Element} */ (e.target).closest("button[data-phase]"));
  if (!b) return;
  ui.phase.value = ui.phase.value === b.dataset.phase ? "" : /** @type {string} */ (b.dataset.phase);
  refilter();
});
ui.more.addEventListener("click", () => { limit += PAGE; need.list = true; schedule(); });
ui.all.addEventListener("click", () => { limit = Infinity; need.list = true; schedule(); });
document.addEventListener("keydown", (e) => {
  const t = e.target;
  const typing = t instanceof HTMLInputElement || t instanceof HTMLSelectElement || t instanceof HTMLTextAreaElement;
  if (e.key === "/" && !typing && !e.ctrlKey && !e.metaKey && !e.altKey) { e.preventDefault(); ui.search.focus(); ui.search.select(); }
  else if (e.key === "Escape" && t === ui.search && ui.search.value) { ui.search.value = ""; refilter(); }
});

connect();
