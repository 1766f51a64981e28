/**
 * The live board with thousands of apps in headless Chromium (docs/board.md):
 * starts the service on the sandbox with N apps (default 5,000; a mix of
 * projects, domains and phases), loads `GET /` in Debian's Chromium via
 * playwright-core, and reads the page's own `performance.measure`s:
 *
 *   snapshot   first WebSocket frame → the snapshot swapped in and rendered
 *              (all N apps parsed and indexed, counts and filter options built,
 *              the first 500 rows in the DOM, layout forced)
 *   painted    first frame → the next animation frame after that (≈ first paint)
 *   load       navigation start → snapshot rendered (page, assets, connect, snapshot)
 *
 * then, on the loaded page: a search keystroke that narrows N apps (filter + DOM
 * reconcile → next frame), "Show all" (all N rows in the DOM → next frame), and
 * a burst of 500 live updates (last one sent → rendered).
 *
 *   flock /tmp/appwatch-bench.lock node --import tsx bench/board/board.ts
 *
 * Env: BENCH_BOARD_APPS (default 5000), BENCH_RUNS (page loads, default 5),
 * APPWATCH_CHROMIUM (default /usr/bin/chromium),
 * BENCH_RESULT_FILE (default bench/results/board-node.json). Node only.
 * @module
 */
import os from "node:os";
import { mkdirSync, writeFileSync } from "node:fs";
import { dirname } from "node:path";
import { chromium } from "playwright-core";
import { CHROMIUM_PATH } from "../../tests/helpers/browser.ts";
import { ksvc, ksvcName, startTestService, waitFor } from "../../tests/helpers/service.ts";

const N = Number(process.env.BENCH_BOARD_APPS ?? 5000);
const RUNS = Number(process.env.BENCH_RUNS ?? 5);
const OUT = process.env.BENCH_RESULT_FILE ?? "bench/results/board-node.json";
const DOMAINS = ["development", "staging", "production"];

function status(i: number): Record<string, unknown> {
  const t = new Date(Date.now() - (i % 600) * 60_000).toISOString().replace(/\.\d+Z$/, "Z");
  const kind = i % 10;
  const ready = kind < 6 ? "True" : kind < 8 ? "Unknown" : "False";
  return {
    conditions: [
      { type: "ConfigurationsReady", status: ready, lastTransitionTime: t },
      { type: "Ready", status: ready, message: ready === "False" ? `RevisionFailed: revision ${i} failed to pull image` : `rev ${i}`, lastTransitionTime: t },
    ],
  };
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const round = (x: number) => Math.round(x * 10) / 10;

const s = await startTestService({ resumeWindow: 20_000 });
const browser = await chromium.launch({ executablePath: CHROMIUM_PATH, args: ["--no-sandbox", "--disable-dev-shm-usage"] });
try {
  for (let i = 0; i < N; i++) {
    const obj = ksvc(`proj-${i % 40}`, DOMAINS[i % 3]!, `app-${String(i).padStart(5, "0")}`);
    s.sb.create("services", { ...obj, status: status(i) });
  }
  await waitFor(() => s.apps.metrics.events.create >= N + 6, `${N} apps watched`, 120_000);

  const runs: { snapshot: number; painted: number; load: number; render: number; handle: number }[] = [];
  let extra: Record<string, number> = {};
  for (let r = 0; r < RUNS; r++) {
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    const errors: string[] = [];
    page.on("pageerror", (e) => errors.push(e.message));
    await page.goto(`${s.url}/`);
    await page.waitForFunction(() => (globalThis as any).appwatchBoard?.paintedMs !== undefined, null, { timeout: 60_000 });
    const st = await page.evaluate(() => {
      const b = (globalThis as any).appwatchBoard;
      return { snapshot: b.snapshotMs, painted: b.paintedMs, render: b.renderMs, handle: b.snapshotHandleMs, load: performance.getEntriesByName("board:snapshot-rendered")[0]!.startTime, apps: b.snapshotApps, rows: document.querySelectorAll("#rows tr").length };
    });
    if (st.apps !== N + 6) throw new Error(`the page rendered ${st.apps} apps, expected ${N + 6}`);
    if (errors.length) throw new Error(`page errors: ${errors.join("; ")}`);
    runs.push({ snapshot: st.snapshot, painted: st.painted, load: st.load, render: st.render, handle: st.handle });
    console.log(`run ${r + 1}: snapshot ${round(st.snapshot)} ms (frame handlers ${round(st.handle)} ms, synced → rendered ${round(st.render)} ms), painted ${round(st.painted)} ms, load ${round(st.load)} ms (${st.apps} apps, ${st.rows} rows rendered)`);

    if (r === RUNS - 1) {
      const nextFrame = "new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)))";
      const search = await page.evaluate(`(async () => {
        const el = document.getElementById("f-search");
        const t0 = performance.now();
        el.value = "app-012"; el.dispatchEvent(new Event("input"));
        await ${nextFrame};
        return [performance.now() - t0, document.querySelectorAll("#rows tr").length];
      })()`) as [number, number];
      await page.evaluate(`(async () => { const el = document.getElementById("f-search"); el.value = ""; el.dispatchEvent(new Event("input")); await ${nextFrame}; })()`);
      const showAll = await page.evaluate(`(async () => {
        const t0 = performance.now();
        document.getElementById("more").click();
        document.getElementById("show-all").click();
        await ${nextFrame};
        return [performance.now() - t0, document.querySelectorAll("#rows tr").length];
      })()`) as [number, number];
      // A burst of live updates while all rows are in the DOM: last change sent → rendered.
      const BURST = 500;
      const t0 = performance.now();
      for (let i = 0; i < BURST; i++) s.sb.updateStatus("services", "flyte", ksvcName(`proj-${i % 40}`, DOMAINS[i % 3]!, `app-${String(i).padStart(5, "0")}`), { conditions: [{ type: "Ready", status: "True", message: `burst ${i}`, lastTransitionTime: "2026-05-01T00:00:00Z" }] });
      const last = `proj-${(BURST - 1) % 40}/${DOMAINS[(BURST - 1) % 3]}/app-${String(BURST - 1).padStart(5, "0")}`;
      await page.waitForFunction((k: string) => document.querySelector(`#rows tr[data-key="flyte/${k}"] .msg`)?.textContent?.startsWith("burst"), last, { timeout: 30_000, polling: "raf" });
      const burst = performance.now() - t0;
      extra = { searchMs: round(search[0]), searchRows: search[1], showAllMs: round(showAll[0]), showAllRows: showAll[1], burstUpdates: BURST, burstMs: round(burst) };
      console.log(`search keystroke: ${extra.searchMs} ms (${search[1]} rows); show all: ${extra.showAllMs} ms (${showAll[1]} rows); ${BURST} live updates: ${extra.burstMs} ms to the last one on screen`);
    }
    await page.close();
  }
  const result = {
    apps: N + 6,
    runs: RUNS,
    medianMs: { snapshot: round(median(runs.map((r) => r.snapshot))), painted: round(median(runs.map((r) => r.painted))), load: round(median(runs.map((r) => r.load))), render: round(median(runs.map((r) => r.render))), handlers: round(median(runs.map((r) => r.handle))) },
    allMs: runs.map((r) => ({ snapshot: round(r.snapshot), painted: round(r.painted), load: round(r.load), render: round(r.render), handlers: round(r.handle) })),
    ...extra,
    chromium: browser.version(),
    machine: { cpu: os.cpus()[0]?.model, cores: os.cpus().length, memGiB: Math.round(os.totalmem() / 2 ** 30), os: `${os.type()} ${os.release()}`, node: process.version },
    date: new Date().toISOString(),
  };
  mkdirSync(dirname(OUT), { recursive: true });
  writeFileSync(OUT, JSON.stringify(result, null, 2) + "\n");
  console.log(`median over ${RUNS} loads of ${N + 6} apps: snapshot ${result.medianMs.snapshot} ms, painted ${result.medianMs.painted} ms, load ${result.medianMs.load} ms → ${OUT}`);
} finally {
  await browser.close();
  await s.stop();
}
