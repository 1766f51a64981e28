/**
 * The ticker (src/service/ticker.ts): one timer per period for every
 * connection's heartbeat (the stream sessions' own) and protocol ping (the Node
 * adapter's own). Callbacks are spread over slots, the timer runs only while
 * something is registered, a silent WebSocket peer is still closed, and nothing
 * is left running once the service has stopped. Checked through the ticker's
 * own state (manual `tick()`s) and a virtual clock, not timing thresholds.
 */
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { Ticker } from "../src/service/ticker.ts";
import { keepAlive } from "../src/service/adapters/node.ts";
import { VirtualClock } from "../src/watch/clock.ts";
import { eventually, SseClient, startTestService, WsClient } from "./helpers/service.ts";

describe("ticker", () => {
  test("on its clock: every callback runs once per period, one timer at a time, none once the last callback is gone", () => {
    const clock = new VirtualClock();
    const t = new Ticker(1_000, 4, clock);
    const runs = [0, 0, 0];
    const stops = runs.map((_, i) => t.add(() => runs[i]!++));
    assert.equal(clock.pending("tick").length, 1, "one timer for every callback");
    assert.equal(clock.pending("tick")[0]!.delay, 250, "a slot every period / slots");
    clock.advance(1_000);
    assert.deepEqual(runs, [1, 1, 1], "each callback once in one period");
    clock.advance(3_000);
    assert.deepEqual(runs, [4, 4, 4]);
    assert.equal(clock.pending("tick").length, 1, "still one timer");
    for (const stop of stops) stop();
    assert.equal(clock.pending("tick").length, 0, "no timer left once nothing is registered");
    clock.advance(10_000);
    assert.deepEqual(runs, [4, 4, 4]);
  });

  test("each callback runs once per period (one slot per tick); the interval runs only while callbacks are registered", () => {
    const t = new Ticker(60_000, 4);
    assert.equal(t.slots, 4);
    assert.deepEqual(t.stats().running, false);
    const runs = new Array(10).fill(0);
    const stops = runs.map((_, i) => t.add(() => runs[i]++));
    assert.equal(t.stats().callbacks, 10);
    assert.equal(t.stats().running, true);
    t.add(() => {}); // another callback…
    assert.equal(t.stats().callbacks, 11);
    for (let i = 0; i < 4; i++) t.tick(); // one period
    assert.deepEqual(runs, new Array(10).fill(1), "every callback ran exactly once in one period");
    assert.ok(t.stats().maxTickCallbacks <= 3, `callbacks spread over the slots (at most ${t.stats().maxTickCallbacks} per tick)`);
    for (let i = 0; i < 8; i++) t.tick(); // two more periods
    assert.deepEqual(runs, new Array(10).fill(3));

    stops.slice(0, 5).forEach((stop) => stop());
    stops[0]!(); // twice is harmless
    for (let i = 0; i < 4; i++) t.tick();
    assert.deepEqual(runs, [3, 3, 3, 3, 3, 4, 4, 4, 4, 4], "unregistered callbacks no longer run");
    stops.slice(5).forEach((stop) => stop());
    assert.equal(t.stats().callbacks, 1);
    assert.equal(t.stats().running, true, "still one callback");
  });

  test("unregistering the last callback stops the interval; registering again restarts it", () => {
    const t = new Ticker(60_000);
    const a = t.add(() => {});
    const b = t.add(() => {});
    assert.equal(t.stats().running, true);
    a();
    assert.equal(t.stats().running, true);
    b();
    assert.deepEqual({ callbacks: t.stats().callbacks, running: t.stats().running }, { callbacks: 0, running: false });
    const c = t.add(() => {});
    assert.equal(t.stats().running, true);
    c();
    assert.equal(t.stats().running, false);
  });

  test("a callback that throws is counted and does not stop the others; a callback may unregister itself", () => {
    const t = new Ticker(60_000, 1);
    let ran = 0;
    const stopBad = t.add(() => {
      throw new Error("boom");
    });
    const stopSelf: () => void = t.add(() => {
      ran++;
      stopSelf();
    });
    const stopOk = t.add(() => ran++);
    t.tick();
    assert.equal(ran, 2);
    assert.equal(t.stats().errors, 1);
    assert.equal(t.stats().callbacks, 2, "the self-removing callback is gone");
    t.tick();
    assert.equal(ran, 3);
    stopBad();
    stopOk();
    assert.equal(t.stats().running, false);
  });

  test("short periods get fewer slots (each slot ≥ 250 ms), long ones at most 64", () => {
    assert.equal(new Ticker(50).slots, 1);
    assert.equal(new Ticker(1_000).slots, 4);
    assert.equal(new Ticker(15_000).slots, 60);
    assert.equal(new Ticker(30_000).slots, 64);
  });

  test("keepAlive (Node adapter, ws): pings every period, terminates a peer that missed a pong, then unregisters", () => {
    const t = new Ticker(60_000, 1);
    const fake = () => {
      const listeners: Record<string, (() => void)[]> = {};
      return {
        pings: 0,
        terminated: false,
        on(ev: string, fn: () => void) {
          (listeners[ev] ??= []).push(fn);
        },
        once(ev: string, fn: () => void) {
          (listeners[ev] ??= []).push(fn);
        },
        off() {},
        ping() {
          this.pings++;
        },
        pong() {
          // As an EventEmitter does: the listener's `this` is the emitter.
          for (const fn of listeners.pong ?? []) fn.call(this);
        },
        terminate() {
          this.terminated = true;
        },
      };
    };
    const live = fake();
    const dead = fake();
    // deno-lint-ignore no-explicit-any
    const stopLive = keepAlive(live as any, t);
    // deno-lint-ignore no-explicit-any
    const stopDead = keepAlive(dead as any, t);
    assert.equal(t.stats().callbacks, 2);

    t.tick();
    assert.deepEqual([live.pings, dead.pings], [1, 1]);
    live.pong();
    t.tick();
    assert.equal(live.terminated, false, "the peer that answered stays");
    assert.equal(live.pings, 2);
    assert.equal(dead.terminated, true, "the silent peer is terminated at the next period");
    assert.equal(dead.pings, 1);
    assert.equal(t.stats().callbacks, 1, "the terminated peer is no longer ticked");
    stopDead.stop(); // the socket's close stops it too: harmless
    stopLive.stop();
    assert.deepEqual({ callbacks: t.stats().callbacks, running: t.stats().running }, { callbacks: 0, running: false });
  });

  test("a running service: heartbeats on WebSocket and SSE come from the sessions' ticker, which stops with the last connection", async () => {
    const s = await startTestService({ heartbeatSeconds: 0.35, pingSeconds: 1 });
    const heartbeats = { stats: () => s.api.heartbeatStats() };
    try {
      const ws = await WsClient.connect(`${s.wsUrl}/v1/watch?snapshot=false`);
      const sse = await SseClient.connect(`${s.url}/v1/watch?snapshot=false`);
      await ws.until((fs) => fs.filter((f) => f.heartbeat !== undefined).length >= 2, "two WebSocket heartbeats");
      await sse.until((fs) => fs.filter((f) => f.heartbeat !== undefined).length >= 2, "two SSE heartbeats");
      assert.equal(heartbeats.stats().callbacks, 2, "one heartbeat callback per stream");
      assert.equal(heartbeats.stats().running, true);
      ws.close();
      sse.close();
      await eventually(async () => heartbeats.stats().callbacks === 0, "the closed streams to unregister", 10_000);
      assert.equal(heartbeats.stats().running, false, "no timer left once no stream is open");
    } finally {
      await s.stop();
    }
    assert.equal(heartbeats.stats().running, false);
  });
});
