/**
 * The live app board's page shell (docs/board.md): the HTML page and its
 * stylesheet, as string constants so they ship inside the module graph on
 * Deno, Bun, Node and workerd and under `deno publish` (no file reads, no
 * build step). The page's script is ./client.js (typed JSDoc), embedded as
 * ./client.gen.ts; ./route.ts serves all three.
 *
 * Written without backticks or `${`, so `String.raw` keeps it byte-exact.
 * @module
 */

/** The page's stylesheet. Colour pairs are chosen for ≥ 4.5:1 contrast (WCAG AA). */
export const BOARD_CSS: string = String.raw`
:root {
  color-scheme: light;
  --fg: #1f2328; --muted: #57606a; --bg: #ffffff; --panel: #f6f8fa; --line: #d0d7de;
  --link: #0550ae; --focus: #0969da; --flash: #fff3b0;
  font-family: system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif;
  font-size: 15px; line-height: 1.4; color: var(--fg); background: var(--bg);
}
* { box-sizing: border-box; }
body { margin: 0; }
a { color: var(--link); }
:focus-visible { outline: 3px solid var(--focus); outline-offset: 2px; }
.vh { position: absolute !important; width: 1px; height: 1px; padding: 0; margin: -1px; overflow: hidden; clip: rect(0 0 0 0); white-space: nowrap; border: 0; }
.skip { position: absolute; left: 8px; top: -40px; background: var(--bg); padding: 6px 10px; border: 1px solid var(--line); z-index: 2; }
.skip:focus { top: 8px; }
header.top { display: flex; flex-wrap: wrap; align-items: center; justify-content: space-between; gap: 8px 16px; padding: 12px 16px; border-bottom: 1px solid var(--line); background: var(--panel); }
header.top h1 { font-size: 1.25rem; margin: 0; }
.conn { display: inline-flex; align-items: center; gap: 8px; font-weight: 600; padding: 4px 10px; border-radius: 999px; border: 1px solid var(--line); background: var(--bg); }
.conn .dot { width: 10px; height: 10px; border-radius: 50%; background: #8c959f; flex: none; }
.conn[data-state="live"] .dot { background: #1a7f37; }
.conn[data-state="syncing"] .dot, .conn[data-state="connecting"] .dot { background: #bf8700; }
.conn[data-state="reconnecting"] .dot, .conn[data-state="auth"] .dot { background: #cf222e; }
main { padding: 12px 16px 32px; }
.where { display: flex; flex-wrap: wrap; align-items: center; gap: 4px 12px; margin: 0; color: var(--muted); font-size: 0.93rem; flex: 1 1 auto; }
.where b { color: var(--fg); font-weight: 600; word-break: break-all; }
.sandbox { display: inline-block; padding: 2px 10px; border-radius: 6px; background: #6639ba; color: #ffffff; font-weight: 700; letter-spacing: 0.02em; }
.sandbox[hidden] { display: none; }
body.sandbox-mode header.top { background: #fbefff; border-bottom-color: #c297ff; }
.sort { display: flex; align-items: center; gap: 6px; }
.sort label { font-size: 0.87rem; color: var(--muted); font-weight: 600; }
.stale { margin: 0 0 8px; padding: 6px 10px; border: 1px solid #cf222e; border-left-width: 4px; background: #ffebe9; color: #82071e; border-radius: 6px; font-weight: 600; }
.stale[hidden] { display: none; }
table.apps.is-stale tbody { opacity: 0.55; filter: grayscale(1); }
table.apps.is-stale tbody td.app .name::after { content: " (stale)"; font-weight: 400; color: var(--muted); }
.notice { display: flex; align-items: center; gap: 12px; margin: 12px 16px 0; padding: 8px 12px; border: 1px solid #d4a72c; background: #fff8c5; color: #3b2e00; border-radius: 6px; }
.notice[hidden], .token[hidden] { display: none; }
.notice p { margin: 0; flex: 1; }
.token { display: flex; flex-wrap: wrap; align-items: center; gap: 8px; margin: 12px 16px 0; padding: 10px 12px; border: 1px solid #cf222e; background: #ffebe9; border-radius: 6px; }
.token .hint { flex-basis: 100%; margin: 0; color: #57606a; font-size: 0.87rem; }
button, input, select { font: inherit; color: inherit; }
button { padding: 4px 10px; border: 1px solid #8c959f; border-radius: 6px; background: var(--bg); cursor: pointer; }
button:hover { background: var(--panel); }
input, select { padding: 4px 8px; border: 1px solid #8c959f; border-radius: 6px; background: var(--bg); min-width: 0; }
.counts { display: flex; flex-wrap: wrap; gap: 6px; list-style: none; margin: 0 0 12px; padding: 0; }
.counts button { display: inline-flex; gap: 6px; align-items: center; border-radius: 999px; }
.counts button[aria-pressed="true"] { outline: 2px solid var(--fg); outline-offset: 1px; }
.counts .n { font-variant-numeric: tabular-nums; font-weight: 700; }
.filters { display: flex; flex-wrap: wrap; align-items: flex-end; gap: 8px 12px; margin-bottom: 8px; }
.filters div { display: flex; flex-direction: column; gap: 2px; }
.filters label { font-size: 0.87rem; color: var(--muted); font-weight: 600; }
.shown { margin: 4px 0 8px; color: var(--muted); }
table.apps { width: 100%; border-collapse: collapse; }
.apps th { text-align: left; font-size: 0.87rem; color: var(--muted); border-bottom: 2px solid var(--line); padding: 6px 8px; white-space: nowrap; }
.apps td { border-bottom: 1px solid var(--line); padding: 6px 8px; vertical-align: top; }
.apps .num { text-align: right; font-variant-numeric: tabular-nums; }
.apps .name { font-weight: 600; word-break: break-word; }
.apps .path { color: var(--muted); font-size: 0.87rem; word-break: break-word; }
.apps .msg { max-width: 36em; word-break: break-word; }
.apps .url a { word-break: break-all; }
.apps time { white-space: nowrap; font-variant-numeric: tabular-nums; }
.badge { display: inline-block; padding: 1px 8px; border-radius: 999px; font-size: 0.8rem; font-weight: 700; letter-spacing: 0.02em; white-space: nowrap; border: 1px solid transparent; }
.p-ACTIVE { background: #dafbe1; color: #0f5323; border-color: #4ac26b; }
.p-FAILED { background: #ffebe9; color: #a40e26; border-color: #ff8182; }
.p-DEPLOYING, .p-PENDING, .p-ASSIGNED, .p-STARTED { background: #fff8c5; color: #6c4400; border-color: #d4a72c; }
.p-SCALING_UP, .p-SCALING_DOWN { background: #ddf4ff; color: #0a3069; border-color: #54aeff; }
.p-STOPPED, .p-UNASSIGNED, .p-UNSPECIFIED { background: #eaeef2; color: #32383f; border-color: #afb8c1; }
tr.flash-a, tr.flash-b { background: var(--flash); }
@media (prefers-reduced-motion: no-preference) {
  tr.flash-a { animation: flash-a 1.6s ease-out forwards; }
  tr.flash-b { animation: flash-b 1.6s ease-out forwards; }
}
@keyframes flash-a { from { background: var(--flash); } to { background: transparent; } }
@keyframes flash-b { from { background: var(--flash); } to { background: transparent; } }
.empty { color: var(--muted); padding: 12px 0; }
.more { display: flex; gap: 8px; margin-top: 12px; }
@media (max-width: 720px) {
  :root { font-size: 16px; }
  header.top, main { padding-left: 10px; padding-right: 10px; }
  .filters div { flex: 1 1 45%; }
  .filters div:first-child { flex-basis: 100%; }
  .apps thead { position: absolute; width: 1px; height: 1px; overflow: hidden; clip: rect(0 0 0 0); }
  .apps, .apps tbody { display: block; }
  .apps tr { display: grid; grid-template-columns: 1fr auto; gap: 2px 12px; padding: 10px 4px; border-bottom: 1px solid var(--line); }
  .apps td { display: block; border: 0; padding: 0; }
  .apps td.app { grid-column: 1; }
  .apps td.phase { grid-column: 2; grid-row: 1; text-align: right; }
  .apps td.msg, .apps td.url { grid-column: 1 / -1; max-width: none; }
  .apps td.num { text-align: left; }
  .apps td[data-label]::before { content: attr(data-label) ": "; color: var(--muted); font-size: 0.87rem; }
  .apps td.msg:empty, .apps td.url:empty { display: none; }
}
`;

/** The page. `{{CSS}}` and `{{JS}}` are replaced with the versioned asset URLs. */
export const BOARD_HTML_TEMPLATE: string = String.raw`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>appwatch: Flyte apps</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="{{CSS}}">
<script type="module" src="{{JS}}"></script>
</head>
<body>
<a class="skip" href="#apps">Skip to the app list</a>
<header class="top">
  <h1>Flyte apps</h1>
  <p class="where" id="where"><span id="w-sandbox" class="sandbox" hidden>SANDBOX: demo data, not a real cluster</span><span>Cluster <b id="w-cluster">…</b></span><span>Namespaces <b id="w-ns">…</b></span></p>
  <div class="sort"><label for="f-sort">Sort by</label><select id="f-sort"><option value="name">Name</option><option value="phase">Phase</option><option value="changed">Last change</option></select></div>
  <div id="conn" class="conn" data-state="connecting" role="status" aria-live="polite"><span class="dot" aria-hidden="true"></span><span id="conn-text">Connecting…</span></div>
</header>
<div id="notice" class="notice" role="status" hidden><p id="notice-text"></p><button type="button" id="notice-close">Dismiss</button></div>
<form id="token-form" class="token" hidden>
  <label for="token-input">Bearer token</label>
  <input id="token-input" type="password" autocomplete="off" required>
  <button type="submit">Connect</button>
  <p class="hint">This server requires a token. It is kept in this tab's session storage only; you can also open the page as <code>/#token=…</code>.</p>
</form>
<main>
  <h2 class="vh" id="counts-h">Apps per phase</h2>
  <ul id="counts" class="counts" aria-labelledby="counts-h"></ul>
  <form id="filters" class="filters" role="search" aria-label="Filter apps">
    <div><label for="f-search">Search (press /)</label><input id="f-search" type="search" autocomplete="off" spellcheck="false" placeholder="name or org/project/…"></div>
    <div><label for="f-project">Project</label><select id="f-project"><option value="">All projects</option></select></div>
    <div><label for="f-domain">Domain</label><select id="f-domain"><option value="">All domains</option></select></div>
    <div><label for="f-phase">Phase</label><select id="f-phase"><option value="">All phases</option></select></div>
    <button type="reset">Clear filters</button>
  </form>
  <p id="shown" class="shown"></p>
  <p id="stale" class="stale" role="status" hidden></p>
  <table id="apps" class="apps" tabindex="-1">
    <caption class="vh" id="apps-caption">Flyte apps, one row per app, sorted by org, project, domain and name</caption>
    <thead><tr><th scope="col" data-sort="name" aria-sort="ascending">App</th><th scope="col" data-sort="phase">Phase</th><th scope="col">Message</th><th scope="col">Public URL</th><th scope="col" class="num">Replicas</th><th scope="col">Age</th><th scope="col" data-sort="changed">Last change</th></tr></thead>
    <tbody id="rows"></tbody>
  </table>
  <p id="empty" class="empty" hidden></p>
  <div class="more"><button type="button" id="more" hidden>Show more</button><button type="button" id="show-all" hidden>Show all</button></div>
</main>
</body>
</html>
`;
