/**
 * Time slices of the watch loops: a backlog of events must give the event loop a turn every
 * `sliceMs`, so sockets are written and timers run while it drains; the yields must not reorder,
 * lose or repeat an event. Time comes from a `VirtualClock`, turns of the event loop from a queue
 * the test runs by hand, and one test uses the runtime's real macrotask.
 */
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { AppK8sClient } from "../src/flyte/app-client.ts";
import type { WatchResponse } from "../src/flyte/model.ts";
import { KubeClient } from "../src/kube/client.ts";
import { startSandbox } from "../src/sandbox/mod.ts";
import { VirtualClock } from "../src/watch/clock.ts";
import { macrotask, TimeSlice } from "../src/watch/slice.ts";
import { waitFor } from "./helpers/run.ts";
import { ksvc } from "./helpers/service.ts";

/** Macrotasks the test runs when it decides the event loop had a turn. */
function manualTurns() {
  const queue: (() => void)[] = [];
  return {
    schedule: (fn: () => void) => void queue.push(fn),
    run() {
      for (const fn of queue.splice(0)) fn();
    },
    get size() {
      return queue.length;
    },
  };
}

/** Whether `p` has settled after the microtasks queued so far ran. */
async function settled(p: Promise<unknown>): Promise<boolean> {
  let done = false;
  p.then(() => done = true);
  for (let i = 0; i < 5; i++) await Promise.resolve();
  return done;
}

describe("TimeSlice", () => {
  test("work within the budget goes on at once; once the budget is spent it waits for one turn of the event loop", async () => {
    const clock = new VirtualClock();
    const turns = manualTurns();
    const slice = new TimeSlice(4, clock, turns.schedule);
    assert.ok(await settled(slice.spent()), "first item");
    clock.advance(3);
    assert.ok(await settled(slice.spent()), "3 ms into a 4 ms slice");
    clock.advance(1);
    const paused = slice.spent();
    assert.equal(await settled(paused), false, "4 ms spent: must wait for a turn");
    assert.equal(slice.yields, 1);
    turns.run();
    assert.ok(await settled(paused), "resumes after the turn");
    // A new slice starts with the next item.
    clock.advance(3);
    assert.ok(await settled(slice.spent()));
    assert.equal(slice.yields, 1);
  });

  test("a turn the loop got anyway (it waited for input) ends the slice: no yield is owed", async () => {
    const clock = new VirtualClock();
    const turns = manualTurns();
    const slice = new TimeSlice(4, clock, turns.schedule);
    await slice.spent();
    clock.advance(3);
    turns.run(); // the loop was idle, the event loop ran
    clock.advance(3);
    assert.ok(await settled(slice.spent()), "6 ms since the first item, but only 0 in this slice");
    assert.equal(slice.yields, 0);
  });

  test("budget 0 yields after every item; a bad budget is refused with its value", async () => {
    const turns = manualTurns();
    const slice = new TimeSlice(0, new VirtualClock(), turns.schedule);
    const first = slice.spent();
    assert.equal(await settled(first), false);
    turns.run();
    assert.ok(await settled(first));
    assert.equal(slice.yields, 1);
    assert.throws(() => new TimeSlice(-1), /must be >= 0 ms, got -1/);
    assert.throws(() => new TimeSlice(Number.NaN), /got NaN/);
  });

  test("on the real event loop, a macrotask queued before a backlog runs inside it, not after it", async () => {
    const slice = new TimeSlice(0, new VirtualClock());
    let done = 0;
    let ranAt = -1;
    macrotask(() => ranAt = done);
    for (let i = 0; i < 100; i++) {
      done++;
      await slice.spent();
    }
    assert.ok(ranAt >= 0 && ranAt < 100, `the queued macrotask ran after ${ranAt} of 100 items`);
  });
});

describe("AppK8sClient watch loops", () => {
  async function run(sliceMs: number) {
    const sb = await startSandbox({ bookmarkIntervalMs: 0 });
    const apps = new AppK8sClient({
      client: new KubeClient({ server: sb.url }),
      namespace: "flyte",
      replicas: false,
      sliceMs,
      config: { baseDomain: "localhost", scheme: "http", ingressAppsPort: 30081, watchBufferSize: 1_000 },
      watch: { idleTimeoutMs: 5_000, backoff: { initialMs: 5, maxMs: 50 } },
    });
    try {
      for (let i = 0; i < 30; i++) sb.sandbox.create("services", ksvc("proj", "dev", `listed-${i}`));
      await apps.startWatching();
      const got: WatchResponse[] = [];
      const sub = apps.subscribe("");
      const reading = (async () => {
        for await (const e of sub) got.push(e);
      })();
      // One synchronous burst: the watch reads it as a backlog.
      for (let i = 0; i < 40; i++) sb.sandbox.create("services", ksvc("proj", "dev", `live-${i}`));
      await waitFor(() => got.length >= 40, "40 live events");
      apps.unsubscribe("", sub);
      await reading;
      const names = got.map((e) => "createEvent" in e ? e.createEvent.app.metadata?.id?.name : `not a create: ${JSON.stringify(e)}`);
      return { names, yields: apps.loopYields };
    } finally {
      await apps.stopWatching();
      await sb.close();
    }
  }

  test("sliceMs 0: the list and the burst yield between events, and every event arrives once, in order", async () => {
    const { names, yields } = await run(0);
    assert.deepEqual(names, Array.from({ length: 40 }, (_, i) => `live-${i}`));
    assert.ok(yields >= 70, `expected a yield after each of 70 events, got ${yields}`);
  });

  test("a slice longer than the work: no yield at all (the yields above come from the slice)", async () => {
    const { names, yields } = await run(1e9);
    assert.equal(names.length, 40);
    assert.equal(yields, 0);
  });
});
