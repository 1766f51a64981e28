/**
 * The service under a 50,000-change burst with one stalled WebSocket peer: a
 * raw TCP client that does the handshake and then stops reading, so the
 * server's send buffer really fills. The fast client must get every change in
 * order, the server's memory must stay bounded (not grow with the frames the
 * stalled peer cannot take), and the stalled peer must converge to the final
 * state once it reads again — or, under the `disconnect` policy, be closed
 * with 1013.
 */
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { residentAfterGc } from "./helpers/memory.ts";
import { rawConnect, type RawWebSocket, upgraded } from "./helpers/raw-ws.ts";
import { appOf, http, type Json, ksvc, ksvcName, messagesOf, metric, sleep, startTestService, statusWithMessage, type TestService, waitFor, WsClient } from "./helpers/service.ts";

const BURST = 50_000;
const APPS = 4;
/** Each change carries ~4 KB, so 50,000 unsent frames would be ~200 MB. */
const PAD = "x".repeat(4000);
const PROJECT = "burst";

function stepOf(app: Json): number | undefined {
  for (const m of messagesOf(app)) {
    const match = /^step (\d+) /.exec(m);
    if (match) return Number(match[1]);
  }
  return undefined;
}


/**
 * The stalled peer reads nothing for as long as the burst takes, so it cannot answer the server's
 * WebSocket pings either (they queue behind the frames it is not reading): at the default 30 s
 * ping period every runtime cuts it once the stall outlasts a period or two (Node's keep-alive
 * after a missed pong, Deno's and Bun's idleTimeout) — how long the burst takes depends on the
 * machine, so on a loaded one the peer was cut and never converged. The keep-alive is not under
 * test here (service-lifecycle and service-ticker test it): the longest ping period keeps it out.
 */
const NO_PING_CUT = { pingSeconds: 3600 } as const;

/** Creates the burst's apps and waits until `fast` has their creates. */
async function createApps(s: TestService, seenCreates: () => number): Promise<string[]> {
  const names: string[] = [];
  for (let i = 0; i < APPS; i++) {
    s.sb.create("services", ksvc(PROJECT, "dev", `app-${i}`));
    names.push(ksvcName(PROJECT, "dev", `app-${i}`));
  }
  await waitFor(() => seenCreates() >= APPS, "the creates of the burst apps", 15_000);
  return names;
}

/** The fast client: checks every update arrives, in order, without keeping the frames. */
function fastTracker() {
  const state = { next: 0, mismatches: [] as string[], bytes: 0, creates: 0, updates: 0 };
  return {
    state,
    onFrame(frame: Json, text: string) {
      if (frame.createEvent) state.creates++;
      if (!frame.updateEvent) return;
      state.updates++;
      state.bytes += text.length;
      const step = stepOf(frame.updateEvent.updatedApp);
      if (step !== state.next && state.mismatches.length < 5) state.mismatches.push(`expected step ${state.next}, got ${step}`);
      state.next = (step ?? state.next) + 1;
    },
  };
}

/** A stalled raw client: records per-app steps as frames arrive (once it reads again). */
async function stalledClient(s: TestService) {
  const steps = new Map<string, number>(); // app name → last step seen
  const backwards: string[] = [];
  const texts: Json[] = [];
  let last: Json;
  const raw: RawWebSocket = upgraded(
    await rawConnect(`${s.url}/v1/watch?project=${PROJECT}&domain=dev`, {
      onText(text) {
        const frame = JSON.parse(text);
        last = frame;
        if (frame.error || frame.start || frame.synced) texts.push(frame);
        const app = appOf(frame);
        if (!app) return;
        const name = app.metadata.id.name as string;
        if (frame.deleteEvent) return void steps.delete(name);
        const step = stepOf(app);
        if (step === undefined) return;
        const prev = steps.get(name);
        if (prev !== undefined && step <= prev && backwards.length < 5) backwards.push(`${name}: step ${step} after ${prev}`);
        steps.set(name, step);
      },
    }),
  );
  return { raw, steps, backwards, control: texts, last: () => last };
}

describe("service under a burst with a stalled WebSocket peer", () => {
  test(`coalesce: ${BURST.toLocaleString("en")} changes; the fast client gets every one in order, memory stays bounded, the stalled peer converges`, async () => {
    const s = await startTestService({ watchBufferSize: 1000, resumeWindow: 100, slowConsumer: "coalesce", ...NO_PING_CUT });
    let fast: WsClient | undefined;
    let stalled: Awaited<ReturnType<typeof stalledClient>> | undefined;
    try {
      const track = fastTracker();
      fast = await WsClient.connect(`${s.wsUrl}/v1/watch?project=${PROJECT}&domain=dev`, { keep: false, onFrame: track.onFrame });
      stalled = await stalledClient(s);
      const names = await createApps(s, () => track.state.creates);
      await waitFor(() => stalled!.control.some((f) => f.synced) && stalled!.raw.texts >= APPS + 2, "the stalled peer's snapshot and creates", 15_000);
      stalled.raw.pause();
      const textsAtPause = stalled.raw.texts;

      // Settle, then measure from here. Memory is sampled after a full collection (garbage is not growth).
      // Kept as a pause: what settles is socket writes to the paused peer, which signal nothing (no event, no counter).
      await sleep(50);
      const before = residentAfterGc();
      let peak = before;
      const truth = new Map<string, number>();
      const CHUNK = 250;
      const WINDOW = 500; // < watchBufferSize and < the sandbox's watch history: nothing may coalesce for the fast client
      for (let i = 0; i < BURST; i++) {
        const app = i % APPS;
        s.sb.updateStatus("services", "flyte", names[app]!, statusWithMessage(`step ${i} ${PAD}`));
        truth.set(`app-${app}`, i);
        if ((i + 1) % CHUNK === 0) {
          await sleep(0);
          await waitFor(() => track.state.updates >= i + 1 - WINDOW, `the fast client to keep up (at ${i + 1})`, 30_000);
          if ((i + 1) % (CHUNK * 4) === 0) peak = Math.max(peak, residentAfterGc());
        }
      }
      await waitFor(() => track.state.updates >= BURST, `the fast client to get all ${BURST} updates (has ${track.state.updates})`, 60_000);
      peak = Math.max(peak, residentAfterGc());

      assert.deepEqual(track.state.mismatches, [], "the fast client got every change in order");
      assert.equal(track.state.updates, BURST);
      assert.ok(stalled.raw.texts - textsAtPause < BURST / 2, `the stalled peer did stall (it read ${stalled.raw.texts - textsAtPause} frames while paused)`);

      // Memory: what the stalled peer could not take must not pile up in the server.
      const growth = peak - before;
      const frameBytes = track.state.bytes;
      assert.ok(
        growth < frameBytes / 2,
        `resident memory (RSS less empty heap) grew by ${(growth / 2 ** 20).toFixed(1)} MiB; ${BURST} frames are ${(frameBytes / 2 ** 20).toFixed(1)} MiB`,
      );

      const m = (await http(`${s.url}/metrics`)).text;
      const coalesced = metric(m, "appwatch_events_coalesced_total") ?? 0;
      const waits = metric(m, "appwatch_backpressure_waits_total") ?? 0;
      assert.ok(coalesced > 0 || waits > 0, `the stalled subscription was held back (coalesced ${coalesced}, backpressure waits ${waits})`);
      assert.equal(metric(m, "appwatch_frames_dropped_by_runtime_total"), 0, "no frame was dropped by the runtime");

      // The stalled peer reads again: it converges to the final state, never going back in time.
      stalled.raw.resume();
      const want = new Map([...truth].sort());
      const converged = () => [...want].every(([name, step]) => stalled!.steps.get(name) === step);
      // A connection that ended cannot converge any more: say so at once, with what it got.
      await waitFor(() => converged() || stalled!.raw.ended, "the stalled peer to converge to the final state", 60_000);
      assert.ok(
        converged(),
        `the stalled peer's connection ended before it converged (close frame ${JSON.stringify(stalled.raw.closeFrame)}, ${stalled.raw.texts} frames, last steps ${JSON.stringify([...stalled.steps])})`,
      );
      assert.deepEqual(new Map([...stalled.steps].sort()), want);
      assert.deepEqual(stalled.backwards, [], "per app, states only move forward");
      assert.equal(stalled.raw.closeFrame, undefined, "the stalled peer was not disconnected");
      assert.equal(fast.closeInfo, undefined, "the fast client was not disconnected");
    } finally {
      fast?.close();
      stalled?.raw.destroy();
      await s.stop();
    }
  });

  test("disconnect: the stalled peer is closed with 1013 after an error frame; the fast client keeps every change", async () => {
    const s = await startTestService({ watchBufferSize: 200, resumeWindow: 100, slowConsumer: "disconnect", ...NO_PING_CUT });
    let fast: WsClient | undefined;
    let stalled: Awaited<ReturnType<typeof stalledClient>> | undefined;
    try {
      const track = fastTracker();
      fast = await WsClient.connect(`${s.wsUrl}/v1/watch?project=${PROJECT}&domain=dev`, { keep: false, onFrame: track.onFrame });
      stalled = await stalledClient(s);
      const names = await createApps(s, () => track.state.creates);
      await waitFor(() => stalled!.control.some((f) => f.synced) && stalled!.raw.texts >= APPS + 2, "the stalled peer's snapshot", 15_000);
      stalled.raw.pause();

      const CHUNK = 50;
      const WINDOW = 100; // < watchBufferSize: the fast client is never the one that lags
      let made = 0;
      const lagged = () => (s.api.metrics.closes.get(1013) ?? 0) > 0;
      while (made < BURST && !lagged()) {
        for (let j = 0; j < CHUNK; j++, made++) s.sb.updateStatus("services", "flyte", names[made % APPS]!, statusWithMessage(`step ${made} ${PAD}`));
        await sleep(0);
        await waitFor(() => track.state.updates >= made - WINDOW, `the fast client to keep up (at ${made})`, 30_000);
      }
      assert.ok(lagged(), `the stalled peer was closed within ${made} changes`);
      await waitFor(() => track.state.updates >= made, `the fast client to get all ${made} updates`, 30_000);
      assert.deepEqual(track.state.mismatches, [], "the fast client got every change in order");
      assert.equal(fast.closeInfo, undefined, "the fast client was not disconnected");

      // The stalled peer reads again: whatever was buffered, then the error frame and the 1013 close.
      stalled.raw.resume();
      const closed = await stalled.raw.closed(30_000);
      assert.equal(closed?.code, 1013, `close frame: ${JSON.stringify(closed)}`);
      assert.match(closed!.reason, /slow consumer/);
      const error = stalled.control.find((f) => f.error);
      assert.equal(error?.error?.code, "lagging");
      assert.ok(stalled.last()?.error, "the error frame is the last frame before the close");
      const m = (await http(`${s.url}/metrics`)).text;
      assert.equal(metric(m, "appwatch_ws_closes_total", 'code="1013"'), 1);
      assert.equal(metric(m, "appwatch_frames_dropped_by_runtime_total"), 0);
    } finally {
      fast?.close();
      stalled?.raw.destroy();
      await s.stop();
    }
  });
});
