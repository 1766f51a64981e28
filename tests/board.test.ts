/**
 * The live app board (GET /, docs/board.md) in headless Chromium: it loads
 * against the sandbox, shows the snapshot, updates on a change (highlighted),
 * removes a deleted app, filters, serves its assets with CSP and ETags,
 * asks for a bearer token when the server needs one, and reconnects after the
 * server restarts (re-snapshotting with a notice when the token cannot be
 * resumed). Any console error or uncaught exception in the page fails the test
 * (this is the page script's lint). A screenshot goes to test-artifacts/board.png.
 *
 * Node only (playwright-core); skipped with a message on Deno and Bun, and
 * when Chromium is missing outside CI. In CI (CI=true) a missing Chromium fails.
 */
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { mkdir, readFile } from "node:fs/promises";
import { gunzipSync } from "node:zlib";
import { createLogger } from "../src/log.ts";
import { seedDemo } from "../src/sandbox/demo.ts";
import { startSandboxCluster } from "../src/sandbox/cluster.ts";
import { connectCluster, type RunningService, startService } from "../src/service/server.ts";
import { BOARD_ASSETS, BOARD_CSP } from "../src/service/board/route.ts";
import { BOARD_JS } from "../src/service/board/client.gen.ts";
import { visible } from "../src/visible.ts";
import { type Browser, browserSkip, collectErrors, CONNECTION_NOISE, launchChromium, type Page } from "./helpers/browser.ts";
import { freePort, startRestartableSandbox, writeKubeconfig } from "./helpers/restartable-sandbox.ts";
import { http, ksvc, ksvcName, startTestService, testSettings, type TestService, within } from "./helpers/service.ts";

const skip = browserSkip();

/** A Knative status with only a Ready condition: the App's last condition carries `message`. */
function readyOnly(status: "True" | "Unknown", message: string): Record<string, unknown> {
  return { conditions: [{ type: "Ready", status, message, lastTransitionTime: new Date().toISOString().replace(/\.\d+Z$/, "Z") }] };
}
const ARTIFACTS = "test-artifacts";

type Cond = { deploymentStatus?: string; message?: string };
/** The page's own message rule, taken out of the shipped script (it has no imports or DOM use). */
function pageMessageRule(): { decidingMessage: (conds: Cond[], phase: string) => string; phaseOf: (c: Cond) => string; placeholders: string[] } {
  const line = (from: string) => BOARD_JS.slice(BOARD_JS.indexOf(from), BOARD_JS.indexOf("\n", BOARD_JS.indexOf(from)));
  const fns = BOARD_JS.slice(BOARD_JS.indexOf("const phaseOf"), BOARD_JS.indexOf("function toRow"));
  assert.ok(line("const PLACEHOLDERS").length > 20 && fns.includes("function decidingMessage"), "the rule is where the test looks for it");
  return new Function(`${line("const PLACEHOLDERS")}\n${fns}\nreturn { decidingMessage, phaseOf, placeholders: PLACEHOLDERS };`)();
}

/** The page's own escaping for text read from the cluster, taken out of the shipped script. */
function pageVisible(): { visible: (s: string) => string; shownPart: (s: string | undefined) => string } {
  const from = BOARD_JS.indexOf("const INVISIBLE");
  const code = BOARD_JS.slice(from, BOARD_JS.indexOf("/** @param {AppId} id */", from));
  assert.ok(code.includes("function visible") && code.includes("function shownPart"), "the escaping is where the test looks for it");
  return new Function(`${code}\nreturn { visible, shownPart };`)();
}

const gunzipLines = async (path: string) => gunzipSync(await readFile(new URL(path, import.meta.url))).toString("utf8").split("\n").filter(Boolean);

describe("the board's message rule over Flyte's golden apps", () => {
  test("a DEPLOYING app never shows a placeholder when a condition has a real message; in Knative's order it shows Ready's", async () => {
    const rule = pageMessageRule();
    const vectors = new Map((await gunzipLines("./fixtures/flyte-golden/vectors.ndjson.gz")).map((l) => {
      const v = JSON.parse(l) as { id: string; ksvc?: { status?: { conditions?: { type?: string; status?: string; reason?: string; message?: string }[] } } };
      return [v.id, v] as const;
    }));
    let deploying = 0;
    let knativeOrder = 0;
    for (const l of await gunzipLines("./fixtures/flyte-golden/flyte.ndjson.gz")) {
      const g = JSON.parse(l) as { id: string; outcome: string; app?: string };
      if (g.outcome !== "app") continue;
      const conds = ((JSON.parse(g.app!) as { status?: { conditions?: Cond[] } }).status?.conditions) ?? [];
      if (conds.length === 0 || rule.phaseOf(conds.at(-1)!) !== "DEPLOYING") continue;
      deploying++;
      const shown = rule.decidingMessage(conds, "DEPLOYING");
      const real = conds.some((c) => c.message && !rule.placeholders.includes(c.message));
      if (real) assert.ok(shown !== "" && !rule.placeholders.includes(shown), `${g.id}: ${JSON.stringify(shown)}`);
      // Knative's stored order (sorted by type): the Ready condition's message decides.
      const kc = vectors.get(g.id)?.ksvc?.status?.conditions ?? [];
      const types = kc.map((c) => String(c.type));
      const ready = kc.find((c) => c.type === "Ready");
      if (types.join() !== "ConfigurationsReady,Ready,RoutesReady" || !ready || ready.status === "True" || !(ready.reason || ready.message)) continue;
      knativeOrder++;
      assert.equal(shown, ready.reason ? `${ready.reason}: ${ready.message ?? ""}` : ready.message, g.id);
    }
    assert.ok(deploying > 100 && knativeOrder > 5, `enough cases: ${deploying} DEPLOYING, ${knativeOrder} in Knative's order`);
  });

  test("the rule's edges: DEPLOYING prefers a not-True condition; other phases their own; placeholders last", () => {
    const { decidingMessage } = pageMessageRule();
    const c = (phase: string, message?: string): Cond => ({ deploymentStatus: `DEPLOYMENT_STATUS_${phase}`, ...(message !== undefined ? { message } : {}) });
    assert.equal(decidingMessage([c("PENDING", "RevisionMissing: waiting"), c("DEPLOYING", "Routes are ready")], "DEPLOYING"), "RevisionMissing: waiting");
    assert.equal(decidingMessage([c("FAILED", "Service is ready"), c("DEPLOYING", "RevisionMissing: x")], "DEPLOYING"), "RevisionMissing: x");
    assert.equal(decidingMessage([c("DEPLOYING", "Configuration is ready"), c("DEPLOYING", "Routes are ready")], "DEPLOYING"), "Routes are ready");
    assert.equal(decidingMessage([c("FAILED", "RevisionFailed: boom"), c("FAILED", "Routes are ready")], "FAILED"), "RevisionFailed: boom");
    assert.equal(decidingMessage([c("ACTIVE", "Routes are ready")], "ACTIVE"), "Routes are ready");
    assert.equal(decidingMessage([c("PENDING")], "PENDING"), "");
    assert.equal(decidingMessage([], "UNSPECIFIED"), "");
  });
});

describe("the board shows identities and messages as people can read them (F14)", () => {
  test("the page escapes exactly what src/visible.ts escapes, code point by code point; an empty part is \"\"", () => {
    const page = pageVisible();
    for (let c = 0; c <= 0xffff; c++) {
      const s = `a${String.fromCharCode(c)}b`;
      if (page.visible(s) !== visible(s)) assert.fail(`U+${c.toString(16).toUpperCase().padStart(4, "0")}: page ${JSON.stringify(page.visible(s))}, visible.ts ${JSON.stringify(visible(s))}`);
    }
    assert.equal(page.visible("evil\u202Etxt.exe"), "evil\\u202Etxt.exe");
    assert.deepEqual([page.shownPart(""), page.shownPart(undefined), page.shownPart("n\u0000")], ['""', '""', "n\\u0000"]);
  });
});

describe("the board's script module", () => {
  test("client.gen.ts is client.js byte for byte, as scripts/gen-board.mjs writes it", async () => {
    // @ts-ignore: a plain .mjs script without type declarations
    const { render, SOURCE, TARGET } = await import("../scripts/gen-board.mjs");
    const source = await readFile(SOURCE, "utf8");
    assert.ok(source.startsWith("// @ts-check\n"), "client.js is type-checked (tsconfig.board.json)");
    assert.equal(BOARD_JS, source, "the served script is not client.js: run `node scripts/gen-board.mjs`");
    assert.equal(await readFile(TARGET, "utf8"), render(source), "client.gen.ts is stale: run `node scripts/gen-board.mjs`");
  });
});

/** The text of every rendered row's app key, in order. */
function rowKeys(page: Page): Promise<string[]> {
  return page.$$eval("#rows tr", (trs: HTMLElement[]) => trs.map((tr) => tr.dataset.key ?? ""));
}

/** Waits until the rendered rows are exactly `keys` (rendering happens on the next animation frame). */
async function expectRows(page: Page, keys: string[]): Promise<void> {
  try {
    await page.waitForFunction(
      (want: string) => JSON.stringify(Array.from(document.querySelectorAll("#rows tr"), (tr) => (tr as HTMLElement).dataset.key)) === want,
      JSON.stringify(keys),
      { timeout: 5_000 },
    );
  } catch {
    assert.deepEqual(await rowKeys(page), keys);
  }
}

function row(page: Page, key: string) {
  return page.locator(`#rows tr[data-key="${key}"]`);
}

/** Board stats the page exposes (connects, snapshots, resumed, resumeFailed, snapshotMs). */
// deno-lint-ignore no-explicit-any
function stats(page: Page): Promise<any> {
  // deno-lint-ignore no-explicit-any
  return page.evaluate(() => ({ ...(globalThis as any).appwatchBoard }));
}

describe("live app board in headless Chromium", { skip }, () => {
  let browser: Browser;
  before(async () => {
    browser = await launchChromium();
  });
  after(async () => {
    await browser?.close();
  });

  test("serves the page and assets with CSP, content types and ETags", async () => {
    const s = await startTestService();
    try {
      const page = await http(`${s.url}/`);
      assert.equal(page.status, 200);
      assert.match(page.headers.get("content-type") ?? "", /^text\/html; charset=utf-8/);
      assert.equal(page.headers.get("content-security-policy"), BOARD_CSP);
      assert.equal(page.headers.get("cache-control"), "no-cache");
      assert.ok(page.text.includes(BOARD_ASSETS.js.slice(1)) && page.text.includes(BOARD_ASSETS.css.slice(1)), "the page references the versioned assets");
      const etag = page.headers.get("etag")!;
      assert.ok(etag);
      assert.equal((await http(`${s.url}/`, { headers: { "if-none-match": etag } })).status, 304);
      const js = await http(`${s.url}${BOARD_ASSETS.js}`);
      assert.equal(js.status, 200);
      assert.match(js.headers.get("content-type") ?? "", /^text\/javascript/);
      assert.match(js.headers.get("cache-control") ?? "", /immutable/);
      const css = await http(`${s.url}${BOARD_ASSETS.css}`);
      assert.match(css.headers.get("content-type") ?? "", /^text\/css/);
      assert.equal((await http(`${s.url}/board/app.js`)).headers.get("cache-control"), "no-cache", "an unversioned URL is revalidated");
    } finally {
      await s.stop();
    }
  });

  test("shows the snapshot, then a created, an updated (highlighted) and a deleted app; filters; keyboard", async () => {
    const s: TestService = await startTestService();
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    const page = await context.newPage();
    const errors = collectErrors(page);
    try {
      await page.goto(`${s.url}/`);
      await page.waitForSelector("#conn[data-state=live]", { timeout: 10_000 });
      const keys = await rowKeys(page);
      assert.equal(keys.length, 6, `the 6 demo apps: ${keys.join(", ")}`);
      assert.deepEqual(keys, [...keys].sort(), "sorted by org/project/domain/name");
      const vllm = row(page, "flyte/llm/production/vllm-llama");
      assert.equal(await vllm.locator(".badge").textContent(), "FAILED");
      assert.match(await vllm.locator(".msg").textContent(), /Unable to fetch image/);
      assert.equal(await page.locator('#counts button[data-phase="ACTIVE"] .n').textContent(), "4");
      assert.equal(await page.locator('#counts button[data-phase=""] .n').textContent(), "6");
      assert.match(await row(page, "demo-org/analytics/production/dash-metrics").locator(".url a").getAttribute("href"), /^http:\/\/dash-metrics-analytics-production\.localhost/);

      // A created app appears (in its sorted place), highlighted.
      s.sb.create("services", ksvc("board", "dev", "new-app"));
      const created = row(page, "flyte/board/dev/new-app");
      await created.waitFor({ timeout: 10_000 });
      assert.equal((await rowKeys(page)).indexOf("flyte/board/dev/new-app"), 4, "in its sorted place (org = the namespace)");
      assert.equal(await page.locator('#counts button[data-phase=""] .n').textContent(), "7");

      // An update changes phase and message in place, highlighted.
      s.sb.updateStatus("services", "flyte", ksvcName("board", "dev", "new-app"), readyOnly("Unknown", "warming up"));
      await page.waitForFunction(() => document.querySelector('#rows tr[data-key="flyte/board/dev/new-app"] .msg')?.textContent?.includes("warming up"), null, { timeout: 10_000 });
      assert.equal(await created.locator(".badge").textContent(), "PENDING");
      assert.match(await created.getAttribute("class"), /flash-[ab]/, "the changed row is highlighted");
      s.sb.updateStatus("services", "flyte", ksvcName("board", "dev", "new-app"), readyOnly("True", "serving"));
      await page.waitForFunction(() => document.querySelector('#rows tr[data-key="flyte/board/dev/new-app"] .badge')?.textContent === "ACTIVE", null, { timeout: 10_000 });
      assert.match(await created.locator(".msg").textContent(), /serving/);
      await page.waitForFunction(() => !/flash/.test(document.querySelector('#rows tr[data-key="flyte/board/dev/new-app"]')?.className ?? "x"), null, { timeout: 5_000 });

      // Filters: phase (via the count chip), project select, search; keyboard "/" focuses the search.
      await page.locator('#counts button[data-phase="FAILED"]').click();
      await expectRows(page, ["flyte/llm/production/vllm-llama"]);
      assert.equal(await page.locator('#counts button[data-phase="FAILED"]').getAttribute("aria-pressed"), "true");
      await page.locator("#filters button[type=reset]").click();
      await page.waitForFunction(() => document.querySelectorAll("#rows tr").length === 7);
      await page.selectOption("#f-project", "llm");
      await expectRows(page, ["flyte/llm/development/gradio-chat", "flyte/llm/production/vllm-llama"]);
      await page.selectOption("#f-project", "");
      await page.locator("body").click({ position: { x: 5, y: 5 } });
      await page.keyboard.press("/");
      assert.equal(await page.evaluate(() => document.activeElement?.id), "f-search", "/ focuses the search");
      await page.keyboard.type("streamlit");
      await expectRows(page, ["demo-org/flytesnacks/development/streamlit-hello"]);
      await page.keyboard.press("Escape");
      await page.waitForFunction(() => document.querySelectorAll("#rows tr").length === 7);

      // A deleted app is removed.
      s.sb.delete("services", "flyte", ksvcName("llm", "development", "gradio-chat"));
      await page.waitForFunction(() => !document.querySelector('#rows tr[data-key="flyte/llm/development/gradio-chat"]'), null, { timeout: 10_000 });
      assert.equal((await rowKeys(page)).length, 6);
      // The counts are redrawn after the rows (a CI run read "7" in between): wait for the chip, then check it.
      await page.waitForFunction(() => document.querySelector('#counts button[data-phase=""] .n')?.textContent === "6", null, { timeout: 10_000 });
      assert.equal(await page.locator('#counts button[data-phase=""] .n').textContent(), "6");

      // Accessibility basics: every control has a label, the table has headers.
      const unlabelled = await page.$$eval("input, select", (els: HTMLInputElement[]) => els.filter((e) => !e.labels?.length).map((e) => e.id));
      assert.deepEqual(unlabelled, []);
      assert.equal(await page.locator("thead th[scope=col]").count(), 7);

      // Screenshot with a highlighted change.
      s.sb.updateStatus("services", "flyte", ksvcName("board", "dev", "new-app"), readyOnly("True", "serving v2"));
      await page.waitForFunction(() => document.querySelector('#rows tr[data-key="flyte/board/dev/new-app"] .msg')?.textContent?.includes("v2"));
      await mkdir(ARTIFACTS, { recursive: true });
      await page.screenshot({ path: `${ARTIFACTS}/board.png`, fullPage: true }); // mid-highlight: the updated row is tinted
      await page.setViewportSize({ width: 390, height: 844 });
      const overflow = await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
      assert.ok(overflow <= 0, `no horizontal scrolling on a 390 px screen (overflow ${overflow}px)`);
      await page.screenshot({ path: `${ARTIFACTS}/board-narrow.png`, fullPage: true });

      // F14: a name with a bidi override and a NUL, and an app-id of "//", shown escaped, not obeyed.
      const spoof = ksvc("board", "dev", "x");
      spoof.metadata!.name = "spoof";
      spoof.metadata!.annotations!["flyte.org/app-id"] = "board/dev/evil\u202Etxt.exe\u0000";
      s.sb.create("services", spoof);
      const empty = ksvc("board", "dev", "y");
      empty.metadata!.name = "empty-id";
      empty.metadata!.annotations!["flyte.org/app-id"] = "//";
      s.sb.create("services", empty);
      await page.waitForFunction(() => document.querySelectorAll("#rows tr").length === 8, null, { timeout: 10_000 });
      const names = await page.$$eval("#rows tr .name", (els: HTMLElement[]) => els.map((e) => e.textContent));
      assert.ok(names.includes("evil\\u202Etxt.exe\\u0000"), JSON.stringify(names));
      const paths = await page.$$eval("#rows tr .path", (els: HTMLElement[]) => els.map((e) => e.textContent));
      assert.ok(paths.includes('flyte / "" / ""'), JSON.stringify(paths));
      assert.ok(!names.some((n: string) => /[\u0000\u202E]/.test(n)), "no raw control or bidi character on the page");
      assert.deepEqual(errors, [], "no console errors or exceptions in the page");
    } finally {
      await context.close();
      await s.stop();
    }
  });

  test("at an incident: sandbox mode in the header, the message that decides a DEPLOYING phase, sort by phase and by last change", async () => {
    const logs: string[] = [];
    const cluster = await startSandboxCluster({ demoIntervalMs: 0 });
    const s = await startService(testSettings({ clusterName: "east", clusterOrg: "acme" }), { logger: createLogger({ level: "warn", sink: (l) => logs.push(l) }), cluster, sandbox: true });
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    const page = await context.newPage();
    const errors = collectErrors(page);
    try {
      await within(s.watching, "the initial sync");
      await page.goto(`${s.url}/`);
      await page.waitForSelector("#conn[data-state=live]", { timeout: 10_000 });
      // Sandbox mode: a badge in the header, a tinted header, the title.
      await page.waitForSelector("#w-sandbox:not([hidden])", { timeout: 5_000 });
      assert.equal(await page.locator("#w-sandbox").textContent(), "SANDBOX: demo data, not a real cluster");
      assert.equal(await page.title(), "[SANDBOX] appwatch: Flyte apps");
      assert.equal(await page.evaluate(() => document.body.classList.contains("sandbox-mode")), true);
      // A named cluster: its organization/name, then the API server.
      assert.equal(await page.locator("#w-cluster").textContent(), `acme/east (${new URL(cluster.url).host})`);
      assert.equal(await page.locator("#w-ns").textContent(), "flyte");

      // A rollout as Knative reports it (the demo's "rolling" state): ConfigurationsReady and Ready
      // Unknown (RevisionMissing), RoutesReady True last. The phase is DEPLOYING because Ready is not
      // True, so Ready's message is shown, not the last condition's placeholder "Routes are ready".
      const at = "2026-01-02T03:04:05Z";
      const waiting = 'Configuration "rolling" is waiting for a Revision to become ready.';
      const rollout = (ready: Record<string, string>) => ({
        conditions: [
          { type: "ConfigurationsReady", status: "Unknown", reason: "RevisionMissing", message: waiting, lastTransitionTime: at },
          { type: "Ready", lastTransitionTime: at, ...ready },
          { type: "RoutesReady", status: "True", lastTransitionTime: at },
        ],
      });
      const name = ksvcName("board", "dev", "rolling");
      cluster.sandbox.create("services", ksvc("board", "dev", "rolling"));
      cluster.sandbox.updateStatus("services", "flyte", name, rollout({ status: "Unknown", reason: "RevisionMissing", message: waiting }));
      const rolling = row(page, "flyte/board/dev/rolling");
      await page.waitForFunction(() => document.querySelector('#rows tr[data-key="flyte/board/dev/rolling"] .badge')?.textContent === "DEPLOYING", null, { timeout: 10_000 });
      assert.equal(await rolling.locator(".msg").textContent(), `RevisionMissing: ${waiting}`);
      // Ready with its own reason (ConfigurationsReady True): Ready's message, not ConfigurationsReady's placeholder.
      cluster.sandbox.updateStatus("services", "flyte", name, {
        conditions: [
          { type: "ConfigurationsReady", status: "True", lastTransitionTime: at },
          { type: "Ready", status: "Unknown", reason: "Deploying", message: "Revision rolling-00002 is starting", lastTransitionTime: at },
          { type: "RoutesReady", status: "True", lastTransitionTime: at },
        ],
      });
      await page.waitForFunction(() => document.querySelector('#rows tr[data-key="flyte/board/dev/rolling"] .msg')?.textContent === "Deploying: Revision rolling-00002 is starting", null, { timeout: 10_000 });
      assert.equal(await rolling.locator(".badge").textContent(), "DEPLOYING");
      // A second rollout, for the sort below.
      cluster.sandbox.create("services", ksvc("board", "dev", "rolling-b"));
      cluster.sandbox.updateStatus("services", "flyte", ksvcName("board", "dev", "rolling-b"), rollout({ status: "Unknown", reason: "RevisionMissing", message: waiting }));
      await page.waitForFunction(() => document.querySelector('#rows tr[data-key="flyte/board/dev/rolling-b"] .badge')?.textContent === "DEPLOYING", null, { timeout: 10_000 });

      // Sort by phase: trouble first (FAILED, then DEPLOYING), ties by name.
      const phases = () => page.$$eval("#rows tr .badge", (els: HTMLElement[]) => els.map((e) => e.textContent ?? ""));
      await page.selectOption("#f-sort", "phase");
      await page.waitForFunction(() => document.querySelector("#rows tr .badge")?.textContent === "FAILED", null, { timeout: 5_000 });
      const byPhase = await phases();
      assert.deepEqual(byPhase.slice(0, 3), ["FAILED", "DEPLOYING", "DEPLOYING"], byPhase.join(" "));
      assert.equal(await page.locator('th[data-sort="phase"]').getAttribute("aria-sort"), "ascending");
      assert.match(await page.locator("#apps-caption").textContent() ?? "", /sorted by phase/);
      assert.deepEqual((await rowKeys(page)).slice(0, 3), ["flyte/llm/production/vllm-llama", "flyte/board/dev/rolling", "flyte/board/dev/rolling-b"]);
      // An app that turns FAILED moves up while sorted by phase: ahead of vllm-llama (same phase, by name).
      cluster.sandbox.updateStatus("services", "flyte", name, { conditions: [{ type: "Ready", status: "False", reason: "RevisionFailed", message: "boom", lastTransitionTime: at }] });
      await expectRows(page, ["flyte/board/dev/rolling", "flyte/llm/production/vllm-llama", "flyte/board/dev/rolling-b", ...(await rowKeys(page)).slice(3)]);
      assert.deepEqual((await phases()).slice(0, 3), ["FAILED", "FAILED", "DEPLOYING"]);

      // Sort by last change: latest first; a change moves an app to the top.
      await page.selectOption("#f-sort", "changed");
      const changedTimes = () => page.$$eval("#rows tr td.changed time", (els: HTMLTimeElement[]) => els.map((e) => e.dateTime));
      await page.waitForFunction(() => document.querySelector('th[data-sort="changed"]')?.getAttribute("aria-sort") === "descending", null, { timeout: 5_000 });
      const times = await changedTimes();
      assert.deepEqual(times, [...times].sort().reverse(), `latest first: ${times.join(" ")}`);
      const later = new Date(Date.now() + 60_000).toISOString().replace(/\.\d+Z$/, "Z");
      cluster.sandbox.updateStatus("services", "flyte", name, readyOnly("True", "fixed"));
      cluster.sandbox.updateStatus("services", "flyte", ksvcName("llm", "development", "gradio-chat"), { conditions: [{ type: "Ready", status: "True", message: "newest", lastTransitionTime: later }] });
      await page.waitForFunction(() => document.querySelector("#rows tr")?.getAttribute("data-key") === "flyte/llm/development/gradio-chat", null, { timeout: 10_000 });
      const keys = await rowKeys(page);
      await page.selectOption("#f-sort", "name");
      await expectRows(page, [...keys].sort()); // back to name order
      assert.equal(await page.locator("#apps.is-stale").count(), 0);
      await mkdir(ARTIFACTS, { recursive: true });
      await page.screenshot({ path: `${ARTIFACTS}/board-sandbox.png`, fullPage: true });
      assert.deepEqual(errors, [], "no console errors or exceptions in the page");
    } finally {
      await context.close();
      await s.stop();
    }
  });

  test("with bearer auth: #token= in the URL works; without it the page asks for one", async () => {
    const s = await startTestService({ authTokens: ["s3cret-token"] });
    const context = await browser.newContext();
    try {
      const page = await context.newPage();
      const errors = collectErrors(page, [...CONNECTION_NOISE, /401/]);
      await page.goto(`${s.url}/`);
      await page.waitForSelector("#token-form:not([hidden])", { timeout: 10_000 });
      assert.equal(await page.locator("#conn").getAttribute("data-state"), "auth");
      await page.fill("#token-input", "s3cret-token");
      await page.keyboard.press("Enter");
      await page.waitForSelector("#conn[data-state=live]", { timeout: 10_000 });
      assert.equal((await rowKeys(page)).length, 6);

      const page2 = await context.newPage();
      const errors2 = collectErrors(page2);
      await page2.goto(`${s.url}/#token=s3cret-token`);
      await page2.waitForSelector("#conn[data-state=live]", { timeout: 10_000 });
      assert.equal(await page2.evaluate(() => location.hash), "", "the token is taken out of the address bar");
      assert.equal((await rowKeys(page2)).length, 6);
      assert.deepEqual([...errors, ...errors2], []);
    } finally {
      await context.close();
      await s.stop();
    }
  });

  test("reconnects after the server restarts: re-snapshots (with a notice) when it cannot resume, then stays live", async (t) => {
    const rs = await startRestartableSandbox({ bookmarkIntervalMs: 0 });
    const kc = await writeKubeconfig(rs.url);
    const port = await freePort();
    const logger = createLogger({ level: "error", sink: () => {} });
    const start = async () => {
      const svc = await startService(testSettings({ port }), { logger, cluster: await connectCluster({ kubeconfig: kc.path, namespaces: ["flyte"] }) });
      await within(svc.watching, "the initial sync");
      return svc;
    };
    let s: RunningService | undefined;
    const context = await browser.newContext();
    await mkdir(ARTIFACTS, { recursive: true });
    try {
      seedDemo(rs.sandbox, { namespace: "flyte", count: 3 });
      s = await start();
      const page = await context.newPage();
      const errors = collectErrors(page, CONNECTION_NOISE);
      await page.goto(`${s.url}/`);
      await page.waitForSelector("#conn[data-state=live]", { timeout: 10_000 });
      const before = await rowKeys(page);
      assert.equal(before.length, 3);
      // The header names the cluster and namespace; a real cluster is not the sandbox.
      await page.waitForFunction((host: string) => document.getElementById("w-cluster")?.textContent === host, new URL(rs.url).host, { timeout: 5_000 });
      assert.equal(await page.locator("#w-ns").textContent(), "flyte");
      assert.equal(await page.locator("#w-sandbox").isVisible(), false);
      assert.equal(await page.title(), "appwatch: Flyte apps");
      assert.equal(await page.locator("#stale").isVisible(), false, "live: not stale");
      assert.doesNotMatch(await page.locator("#apps").getAttribute("class") ?? "", /is-stale/);

      await s.stop();
      s = undefined;
      await page.waitForSelector("#conn[data-state=reconnecting]", { timeout: 10_000 });
      // Disconnected: the rows are marked stale, with the time of the last frame from the server.
      await page.waitForSelector("#apps.is-stale", { timeout: 5_000 });
      assert.equal(await page.locator("#stale").isVisible(), true);
      assert.match(await page.locator("#stale").textContent() ?? "", /^Disconnected: the rows below may be out of date; last update from the server at \d\d:\d\d:\d\d/);
      const dimmed = await page.$eval("#rows", (el: HTMLElement) => Number(getComputedStyle(el).opacity));
      assert.ok(dimmed < 1, `rows are dimmed (opacity ${dimmed})`);
      await page.screenshot({ path: `${ARTIFACTS}/board-stale.png`, fullPage: true });
      // Changes while the server is away: one app goes, one comes.
      rs.sandbox.delete("services", "flyte", rs.sandbox.list("services")[0]!.metadata!.name!);
      rs.sandbox.create("services", ksvc("board", "dev", "while-down"));

      s = await start();
      await page.waitForSelector('#rows tr[data-key="flyte/board/dev/while-down"]', { timeout: 20_000 });
      await page.waitForSelector("#conn[data-state=live]", { timeout: 10_000 });
      assert.equal(await page.locator("#apps.is-stale").count(), 0, "live again: not stale");
      assert.equal(await page.locator("#stale").isVisible(), false);
      const keys = await rowKeys(page);
      assert.equal(keys.length, 3);
      assert.ok(!keys.includes(before.find((k) => !keys.includes(k))!) && keys.filter((k) => before.includes(k)).length === 2, `one app gone, one new: ${keys.join(", ")}`);
      const st = await stats(page);
      t.diagnostic(`after the restart: ${st.connects} connects, ${st.snapshots} snapshots, ${st.resumed} resumed, resumeFailed ${st.resumeFailed || "-"}`);
      assert.ok(st.connects >= 2, `reconnected (${st.connects} connects)`);
      if (st.snapshots >= 2) {
        // The new server could not resume the token (it relisted): the board says it rebuilt.
        assert.equal(await page.locator("#notice").isVisible(), true, "the re-snapshot notice is shown");
        assert.match(await page.locator("#notice-text").textContent(), /rebuilt from a new snapshot/);
      } else {
        assert.ok(st.resumed >= 1, "resumed exactly");
      }

      // Live again.
      rs.sandbox.create("services", ksvc("board", "dev", "after"));
      await page.waitForSelector('#rows tr[data-key="flyte/board/dev/after"]', { timeout: 10_000 });
      assert.deepEqual(errors, []);
    } finally {
      await context.close();
      await s?.stop();
      await rs.close();
      await kc.cleanup();
    }
  });
});
