/**
 * The watch engine against the sandbox API server over real HTTP: the
 * failure modes of real watch clients (docs/watch-protocol.md, section
 * "Failure modes"), each as a scenario with real faults.
 */
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { KubeClient } from "../src/kube/client.ts";
import { createLogger } from "../src/log.ts";
import { createCredentials } from "../src/kube/credentials.ts";
import { Reflector, type ReflectorOptions } from "../src/watch/reflector.ts";
import { createWatcher } from "../src/watch/group.ts";
import { KNATIVE_SERVICES, type KubeObject, type ReflectorEvent } from "../src/watch/types.ts";
import { VirtualClock } from "../src/watch/clock.ts";
import { type Sandbox, startSandbox } from "../src/sandbox/mod.ts";
import { delay, start, summary, waitFor } from "./helpers/run.ts";
import { fingerprint, strictReplay } from "./helpers/replay.ts";

const SELECTOR = "flyte.org/app-managed=true";

function ksvc(name: string, opts: { ns?: string; managed?: boolean; image?: string } = {}): KubeObject {
  return {
    apiVersion: "serving.knative.dev/v1",
    kind: "Service",
    metadata: {
      name,
      namespace: opts.ns ?? "flyte",
      labels: { "flyte.org/app-managed": opts.managed === false ? "false" : "true" },
    },
    spec: { template: { spec: { containers: [{ image: opts.image ?? "app:v1" }] } } },
  };
}

/** The sandbox's managed objects in `flyte` as `key@rv` lines. */
function serverState(sandbox: Sandbox, ns = "flyte"): string[] {
  return fingerprint(sandbox.list("services", ns).filter((o) => o.metadata.labels?.["flyte.org/app-managed"] === "true"));
}

interface Env {
  sandbox: Sandbox;
  url: string;
  close(): Promise<void>;
}

async function env(options: Parameters<typeof startSandbox>[0] = {}): Promise<Env> {
  return await startSandbox({ bookmarkIntervalMs: 0, ...options });
}

function reflectorFor(e: Env, options: Partial<ReflectorOptions<KubeObject>> = {}, client?: KubeClient) {
  return new Reflector({
    client: client ?? new KubeClient({ server: e.url }),
    resource: KNATIVE_SERVICES,
    namespace: "flyte",
    labelSelector: SELECTOR,
    initialList: "paginated",
    idleTimeoutMs: 1_000,
    backoff: { initialMs: 5, maxMs: 50 },
    ...options,
  });
}

/**
 * Polls `pred` (a signal from the real HTTP side), moving `clock` through every backoff it is waiting
 * on: with a virtual clock the idle budget is passed only where a test says so (`clock.advance`).
 */
async function untilOn(clock: VirtualClock, pred: () => boolean, what: string): Promise<void> {
  await waitFor(() => {
    if (pred()) return true;
    const backoff = clock.pending("backoff")[0];
    if (backoff !== undefined) clock.advanceTo(backoff.due);
    return pred();
  }, what);
}

const watchRequests = (s: Sandbox) => s.requests.filter((r) => r.query.watch === "1" || r.query.watch === "true");
const listRequests = (s: Sandbox) => s.requests.filter((r) => !(r.query.watch === "1" || r.query.watch === "true") && r.method === "GET" && r.path.endsWith("/services"));

describe("failure modes against the sandbox", () => {
  test("1: a half-open connection is aborted when the idle budget is spent, not before; the watch resumes from the last RV and gets the event sent during the outage; no relist", async () => {
    const e = await env();
    const clock = new VirtualClock(1_000_000);
    const r = reflectorFor(e, { idleTimeoutMs: 300, clock });
    e.sandbox.create("services", ksvc("a"));
    const run = start(r);
    try {
      await untilOn(clock, () => r.synced && e.sandbox.activeWatches() === 1, "synced and watching");
      e.sandbox.faults.add({ verb: "watch", action: { type: "stall" } });
      e.sandbox.closeWatches(); // the next watch will be half-open
      await untilOn(clock, () => e.sandbox.faults.pending === 0 && e.sandbox.activeWatches() === 1, "stalled watch started");
      await untilOn(clock, () => clock.pending("idle").length === 1, "the stalled watch's idle timer");
      e.sandbox.create("services", ksvc("during-outage"));
      clock.advance(299);
      assert.equal(clock.pending("idle").length, 1, "still waiting 1 ms before the idle budget");
      clock.advance(1);
      assert.equal(clock.pending("idle").length, 0, "the idle timer fired at the budget and did not re-arm");
      await untilOn(clock, () => r.metrics.reconnects.idle === 1, "reconnect counted as idle");
      await untilOn(clock, () => r.store.has("flyte/during-outage"), "event from the outage");
      assert.equal(r.metrics.reconnects.idle, 1);
      assert.equal(listRequests(e.sandbox).length, 1, "no relist");
      const w = watchRequests(e.sandbox);
      assert.equal(w.at(-1)!.query.resourceVersion, w.at(-2)!.query.resourceVersion, "resumed from the same RV");
    } finally {
      await run.stop();
      await e.close();
    }
  });

  test("2: a healthy stream is never cut by a client timeout (one connection for 3 s of steady events, 100 ms apart, idle budget 500 ms); a stall is", async () => {
    const e = await env();
    const clock = new VirtualClock(1_000_000);
    const r = reflectorFor(e, { idleTimeoutMs: 500, clock });
    e.sandbox.faults.add({ verb: "watch", action: { type: "stall", afterEvents: 30 } });
    const run = start(r);
    try {
      await untilOn(clock, () => r.synced && e.sandbox.activeWatches() === 1, "synced and watching");
      for (let i = 0; i < 30; i++) {
        e.sandbox.create("services", ksvc(`steady-${i}`));
        await waitFor(() => r.store.has(`flyte/steady-${i}`), `steady-${i} received`);
        clock.advance(100);
      }
      assert.equal(r.metrics.reconnects.idle, 0, "never cut while events flow");
      assert.equal(watchRequests(e.sandbox).length, 1, "one upstream connection for the whole steady phase");
      assert.equal(r.store.size, 30);
      e.sandbox.create("services", ksvc("after-stall"));
      clock.advance(399);
      assert.equal(clock.pending("idle").length, 1, "the stall is not cut before the budget");
      clock.advance(1);
      assert.equal(clock.pending("idle").length, 0, "cut at the budget");
      await untilOn(clock, () => r.metrics.reconnects.idle === 1, "reconnect counted as idle");
      await untilOn(clock, () => r.store.has("flyte/after-stall"), "resumed after the stall");
      assert.equal(r.metrics.reconnects.idle, 1);
      assert.equal(watchRequests(e.sandbox).length, 2);
    } finally {
      await run.stop();
      await e.close();
    }
  });

  for (const variant of ["compacted history (in-stream ERROR 410)", "HTTP 410", "in-stream 410 Gone"] as const) {
    test(`3: 410 (${variant}) → exactly one relist, stale RV never re-sent`, async () => {
      const e = await env();
      const r = reflectorFor(e);
      e.sandbox.create("services", ksvc("a"));
      const run = start(r);
      try {
        await run.waitFor(() => r.synced && e.sandbox.activeWatches() === 1, "synced and watching");
        const staleRv = r.resumeResourceVersion!;
        if (variant === "HTTP 410") {
          e.sandbox.faults.add({ verb: "watch", action: { type: "status", code: 410, reason: "Expired" } });
        } else if (variant === "in-stream 410 Gone") {
          e.sandbox.faults.add({ verb: "watch", action: { type: "status", code: 410, reason: "Gone", inStream: true } });
        } else {
          // Cut the watcher off (half-open), change things and compact the history it would need.
          e.sandbox.faults.add({ verb: "watch", action: { type: "stall" } });
        }
        // A write our selector does not see: the server's RV moves on, our resume RV does not.
        e.sandbox.create("services", ksvc("unmanaged", { managed: false }));
        e.sandbox.closeWatches();
        await waitFor(() => e.sandbox.faults.pending === 0, "fault used");
        e.sandbox.create("services", ksvc("b"));
        if (variant === "compacted history (in-stream ERROR 410)") e.sandbox.compact();
        await run.waitFor(() => r.metrics.relists === 1 && r.store.has("flyte/b") && watchRequests(e.sandbox).length >= 3, "watch after relist");
        // A barrier instead of a pause: a write that arrives through the live watch shows the
        // reflector settled there (a second relist would have come before it).
        e.sandbox.create("services", ksvc("sentinel"));
        await run.waitFor(() => summary(run.events).some((s) => s.startsWith("added flyte/sentinel@")), "the sentinel through the watch");
        assert.equal(listRequests(e.sandbox).length, 2, `exactly one relist: ${JSON.stringify(e.sandbox.requests.map((q) => [q.method, q.path.split("/").pop(), q.query, q.status]))}`);
        const withStale = e.sandbox.requests.filter((q) => q.query.resourceVersion === staleRv);
        // The first watch, (the stalled one,) the re-watch that got 410 — and never again.
        assert.equal(withStale.length, variant === "compacted history (in-stream ERROR 410)" ? 3 : 2, "stale RV never re-sent");
        assert.ok(r.resumeResourceVersion !== staleRv);
        assert.equal(r.metrics.expired, 1);
        assert.deepEqual(fingerprint(r.store.values()), serverState(e.sandbox));
        assert.equal(run.events.filter((x) => x.type === "synced" && x.phase === "resync" && x.cause === "expired").length, 1);
        strictReplay(run.events);
      } finally {
        await run.stop();
        await e.close();
      }
    });
  }

  for (const bookmarks of [true, false]) {
    test(`3: quiet resource ${bookmarks ? "with bookmarks keeps its resume RV fresh: no 410" : "without bookmarks falls behind the history window: 410 and relist (control)"}`, async () => {
      const e = await env({ historyLimit: 20, bookmarkIntervalMs: bookmarks ? 50 : 0 });
      const r = reflectorFor(e);
      e.sandbox.create("services", ksvc("quiet"));
      const run = start(r);
      try {
        await run.waitFor(() => r.synced && e.sandbox.activeWatches() === 1, "synced and watching");
        // Unrelated writes (not matching our selector) push our RV out of the window.
        for (let i = 0; i < 60; i++) {
          e.sandbox.create("services", ksvc(`other-${i}`, { managed: false }));
          if (i % 5 === 4) await delay(2); // a steady trickle, not a burst that outruns the watch cache
        }
        if (bookmarks) await run.waitFor(() => r.resumeResourceVersion === e.sandbox.resourceVersion, "bookmark caught up");
        e.sandbox.closeWatches();
        await run.waitFor(() => watchRequests(e.sandbox).length >= 2, "re-watch");
        if (bookmarks) {
          // A barrier instead of a pause: the sentinel arriving through the re-watch shows that
          // the re-watch was accepted (a 410 and relist would have come before it).
          e.sandbox.create("services", ksvc("sentinel"));
          await run.waitFor(() => summary(run.events).some((s) => s.startsWith("added flyte/sentinel@")), "the sentinel through the re-watch");
          assert.equal(r.metrics.expired, 0);
          assert.equal(r.metrics.relists, 0);
        } else {
          await run.waitFor(() => r.metrics.relists === 1, "relist");
          assert.equal(r.metrics.expired, 1);
        }
        const rvOf = (k: string) => r.store.get(k)!.metadata.resourceVersion;
        assert.deepEqual(
          summary(run.events.filter((x) => x.type !== "synced")),
          [`added flyte/quiet@${rvOf("flyte/quiet")}`, ...(bookmarks ? [`added flyte/sentinel@${rvOf("flyte/sentinel")}`] : [])],
        );
      } finally {
        await run.stop();
        await e.close();
      }
    });
  }

  test("4: a continue token expiring mid-list restarts with one full list; no partial snapshot is published", async () => {
    const e = await env({ continueTtlMs: 100 });
    for (let i = 0; i < 30; i++) e.sandbox.create("services", ksvc(`app-${String(i).padStart(2, "0")}`));
    // Slow the first page so its token has expired when page two is asked for.
    e.sandbox.faults.add({ verb: "list", action: { type: "drip", chunkBytes: 256, delayMs: 15 } });
    const r = reflectorFor(e, { pageSize: 10 });
    const run = start(r);
    try {
      await run.waitFor(() => r.synced && e.sandbox.activeWatches() === 1, "synced and watching");
      const lists = listRequests(e.sandbox);
      assert.equal(lists[0]!.query.limit, "10");
      assert.ok(lists[1]!.query.continue, "second page asked");
      assert.equal(lists[1]!.status, 410);
      assert.equal(lists[2]!.query.limit, undefined, "then one full list");
      assert.equal(lists.length, 3, "no tight loop");
      assert.equal(run.events.filter((x) => x.type === "synced").length, 1);
      assert.equal(run.events.findIndex((x) => x.type === "synced"), 30, "synced only after all 30 objects");
    } finally {
      await run.stop();
      await e.close();
    }
  });

  test("5: ECONNRESET mid-stream, 500 on list, 403 on watch and 429 with Retry-After: it keeps retrying, and converges", async () => {
    const e = await env();
    e.sandbox.create("services", ksvc("a"));
    e.sandbox.faults.add({ verb: "list", action: { type: "status", code: 500, reason: "InternalError" } });
    e.sandbox.faults.add({ verb: "watch", action: { type: "cut", afterEvents: 0, midLine: false } });
    e.sandbox.faults.add({ verb: "watch", action: { type: "status", code: 403, reason: "Forbidden", message: "services.serving.knative.dev is forbidden" } });
    e.sandbox.faults.add({ verb: "watch", action: { type: "status", code: 429, reason: "TooManyRequests", retryAfterSeconds: 1 } });
    const r = reflectorFor(e);
    const run = start(r);
    try {
      await run.waitFor(() => r.synced && e.sandbox.activeWatches() === 1, "synced and watching");
      e.sandbox.create("services", ksvc("b"));
      await run.waitFor(() => r.store.has("flyte/b"), "b after all faults", 10_000);
      assert.equal(e.sandbox.faults.pending, 0);
      const w = watchRequests(e.sandbox);
      const i429 = w.findIndex((q) => q.status === 429);
      assert.ok(w[i429 + 1]!.time - w[i429]!.time >= 950, "Retry-After honoured");
      assert.equal(run.error(), undefined);
    } finally {
      await run.stop();
      await e.close();
    }
  });

  test("6: 1,000 disconnect cycles: one reconnect each, never two open watches, no timers or sockets left behind", async () => {
    const e = await env();
    e.sandbox.create("services", ksvc("a"));
    const tracker = trackTimers();
    const r = reflectorFor(e, { backoff: { initialMs: 0.5, maxMs: 1 } });
    const run = start(r);
    let maxOpen = 0;
    const sampler = setInterval(() => (maxOpen = Math.max(maxOpen, e.sandbox.activeWatches())), 1);
    try {
      await run.waitFor(() => r.synced && e.sandbox.activeWatches() === 1, "synced and watching");
      e.sandbox.faults.add({ verb: "watch", times: 1000, action: { type: "cut", afterEvents: 0 } });
      e.sandbox.closeWatches();
      await run.waitFor(() => e.sandbox.faults.pending === 0, "1000 cuts", 60_000);
      e.sandbox.create("services", ksvc("after"));
      await run.waitFor(() => r.store.has("flyte/after"), "recovered");
      assert.ok(maxOpen <= 1, `open watches peaked at ${maxOpen}`);
      assert.ok(watchRequests(e.sandbox).length >= 1001);
    } finally {
      clearInterval(sampler);
      await run.stop();
    }
    await waitFor(() => e.sandbox.activeWatches() === 0, "server sees no open watch");
    // Library timers (HTTP client internals) may still be due; give them a moment to fire.
    await waitFor(() => tracker.live() === 0, "no live timers", 5_000).catch(() => {});
    assert.equal(tracker.live(), 0, `timers left: ${tracker.live()}`);
    tracker.restore();
    await e.close();
  });

  test("6: 1,000 start/stop cycles leave no open watch and no timer", async () => {
    const e = await env();
    e.sandbox.create("services", ksvc("a"));
    const tracker = trackTimers();
    const client = new KubeClient({ server: e.url });
    try {
      for (let i = 0; i < 1000; i++) {
        const r = reflectorFor(e, {}, client);
        const ac = new AbortController();
        const it = r.run(ac.signal);
        const first = await it.next(); // added a
        assert.equal(first.value?.type, "added");
        if (i % 2 === 0) ac.abort(); // stop via the signal…
        else await it.return(undefined); // …or by leaving the loop
        await it.next();
      }
      await waitFor(() => e.sandbox.activeWatches() === 0, "no open watch on the server");
      await waitFor(() => tracker.live() === 0, "no live timers", 5_000).catch(() => {});
      assert.equal(tracker.live(), 0, `timers left: ${tracker.live()}`);
    } finally {
      tracker.restore();
      await e.close();
    }
  });

  test("7: no replay: a clean close re-watches without sendInitialEvents and emits nothing for unchanged objects", async () => {
    const e = await env();
    for (const n of ["a", "b", "c"]) e.sandbox.create("services", ksvc(n));
    const r = reflectorFor(e, { initialList: "auto" });
    const run = start(r);
    try {
      await run.waitFor(() => r.synced && e.sandbox.activeWatches() === 1, "synced and watching");
      const before = run.events.length;
      for (let i = 0; i < 3; i++) {
        e.sandbox.closeWatches();
        await run.waitFor(() => watchRequests(e.sandbox).length === i + 2, `re-watch ${i}`);
      }
      // A barrier instead of a pause: the first thing emitted after the re-watches is the sentinel.
      e.sandbox.create("services", ksvc("sentinel"));
      await run.waitFor(() => summary(run.events).some((s) => s.startsWith("added flyte/sentinel@")), "the sentinel through the watch");
      assert.deepEqual(summary(run.events.slice(before)), [`added flyte/sentinel@${r.store.get("flyte/sentinel")!.metadata.resourceVersion}`], "nothing emitted for unchanged objects");
      const w = watchRequests(e.sandbox);
      assert.equal(w[0]!.query.sendInitialEvents, "true");
      for (const q of w.slice(1)) assert.equal(q.query.sendInitialEvents, undefined);
      assert.equal(listRequests(e.sandbox).length, 0);
    } finally {
      await run.stop();
      await e.close();
    }
  });

  test("8: a delete made while disconnected, with history compacted, comes out as an inferred DELETED after the relist", async () => {
    const e = await env();
    for (const n of ["keep", "doomed"]) e.sandbox.create("services", ksvc(n));
    const r = reflectorFor(e, { idleTimeoutMs: 300 });
    const run = start(r);
    try {
      await run.waitFor(() => r.synced && e.sandbox.activeWatches() === 1, "synced and watching");
      e.sandbox.faults.add({ verb: "watch", action: { type: "stall" } });
      e.sandbox.closeWatches();
      await waitFor(() => e.sandbox.faults.pending === 0, "disconnected");
      e.sandbox.delete("services", "flyte", "doomed");
      e.sandbox.compact();
      await run.waitFor(() => !r.store.has("flyte/doomed"), "tombstone");
      const last = run.events.slice(-2);
      assert.deepEqual(summary(last).map((s) => s.replace(/@\d+/, "")), ["deleted(inferred) flyte/doomed", "synced resync (expired)"]);
      assert.deepEqual(fingerprint(r.store.values()), serverState(e.sandbox));
    } finally {
      await run.stop();
      await e.close();
    }
  });

  test("9: a streaming list cut inside its unordered initial burst is discarded and redone from RV \"\"", async () => {
    const e = await env();
    for (let i = 0; i < 6; i++) e.sandbox.create("services", ksvc(`app-${i}`));
    e.sandbox.faults.add({ verb: "watch", action: { type: "cut", afterEvents: 3 } });
    const r = reflectorFor(e, { initialList: "streaming" });
    const run = start(r);
    try {
      await run.waitFor(() => r.synced && e.sandbox.activeWatches() === 1, "synced and watching");
      const w = watchRequests(e.sandbox);
      assert.equal(w.length, 2);
      for (const q of w) {
        assert.equal(q.query.sendInitialEvents, "true");
        assert.equal(q.query.resourceVersion, "");
      }
      assert.equal(run.events.filter((x) => x.type === "added").length, 6, "each object once");
      strictReplay(run.events);
    } finally {
      await run.stop();
      await e.close();
    }
  });

  test("10: a slow consumer is not mistaken for a dead connection, and nothing is lost", async () => {
    const e = await env();
    const clock = new VirtualClock(1_000_000);
    const r = reflectorFor(e, { idleTimeoutMs: 200, clock });
    const run = start(r, async (ev) => {
      // The consumer holds each event for > 2× the idle budget (and yields a real turn, so the
      // connection could notice): a paused connection must not count that as silence.
      if (ev.type !== "synced") {
        clock.advance(450);
        await new Promise((resolve) => setTimeout(resolve, 0));
      }
    });
    try {
      await untilOn(clock, () => r.synced && e.sandbox.activeWatches() === 1, "synced and watching");
      for (let i = 0; i < 4; i++) e.sandbox.create("services", ksvc(`slow-${i}`));
      await run.waitFor(() => run.events.length === 5, "all events", 10_000);
      assert.equal(r.metrics.reconnects.idle, 0);
      assert.equal(watchRequests(e.sandbox).length, 1);
    } finally {
      await run.stop();
      await e.close();
    }
  });

  test("11: a consumer that throws stops the loop cleanly; running again resumes from the last RV without a relist", async () => {
    const e = await env();
    e.sandbox.create("services", ksvc("a"));
    const r = reflectorFor(e);
    await assert.rejects(
      (async () => {
        for await (const ev of r.run()) {
          if (ev.type === "synced") throw new Error("consumer bug");
        }
      })(),
      /consumer bug/,
    );
    await waitFor(() => e.sandbox.activeWatches() === 0, "nothing left open");
    e.sandbox.create("services", ksvc("b"));
    const run = start(r);
    try {
      await run.waitFor(() => r.store.has("flyte/b"), "b");
      assert.deepEqual(summary(run.events).map((s) => s.replace(/@\d+/, "")), ["added flyte/b"]);
      assert.equal(listRequests(e.sandbox).length, 1, "no relist");
    } finally {
      await run.stop();
      await e.close();
    }
  });

  test("12: token rotation — the old token starts failing with 401 while the token file is replaced: recovery without a restart", async () => {
    const dir = await mkdtemp(join(tmpdir(), "appwatch-token-"));
    const tokenFile = join(dir, "token");
    await writeFile(tokenFile, "token-1\n");
    const e = await env({ token: "token-1" });
    e.sandbox.create("services", ksvc("a"));
    const credentials = createCredentials({ type: "tokenFile", path: tokenFile }, { refreshMs: 60_000 });
    const client = new KubeClient({ server: e.url, credentials });
    const r = reflectorFor(e, {}, client);
    const run = start(r);
    try {
      await run.waitFor(() => r.synced && e.sandbox.activeWatches() === 1, "synced and watching");
      await writeFile(tokenFile, "token-2\n");
      e.sandbox.setToken("token-2");
      e.sandbox.closeWatches();
      e.sandbox.create("services", ksvc("b"));
      await run.waitFor(() => r.store.has("flyte/b"), "b after rotation");
      const statuses = e.sandbox.requests.map((q) => q.status);
      assert.equal(statuses.filter((s) => s === 401).length, 1, "exactly one 401, then the re-read token works");
    } finally {
      await run.stop();
      await e.close();
      await rm(dir, { recursive: true, force: true });
    }
  });

  test("13: with an async consumer of random latency, events of each object arrive in stream order", async () => {
    const e = await env();
    const r = reflectorFor(e);
    const seen = new Map<string, number[]>();
    const run = start(r, async (ev) => {
      await delay(Math.random() * 3);
      if (ev.type === "synced") return;
      const k = ev.object.metadata.name!;
      seen.set(k, [...(seen.get(k) ?? []), Number(ev.object.metadata.resourceVersion)]);
    });
    try {
      await run.waitFor(() => r.synced && e.sandbox.activeWatches() === 1, "synced and watching");
      for (const n of ["x", "y", "z"]) e.sandbox.create("services", ksvc(n));
      for (let i = 0; i < 20; i++) {
        for (const n of ["x", "y", "z"]) e.sandbox.patch("services", "flyte", n, { spec: { template: { spec: { containers: [{ image: `app:${i}` }] } } } });
      }
      await run.waitFor(() => [...seen.values()].reduce((a, b) => a + b.length, 0) === 63, "all 63 events", 10_000);
      for (const [k, rvs] of seen) assert.deepEqual(rvs, [...rvs].sort((a, b) => a - b), `order for ${k}`);
    } finally {
      await run.stop();
      await e.close();
    }
  });
});

describe("scopes and selectors", () => {
  test("objects leaving and entering the label selector are seen as deleted / added", async () => {
    const e = await env();
    e.sandbox.create("services", ksvc("a"));
    const r = reflectorFor(e);
    const run = start(r);
    try {
      await run.waitFor(() => r.synced && e.sandbox.activeWatches() === 1, "synced and watching");
      e.sandbox.patch("services", "flyte", "a", { metadata: { labels: { "flyte.org/app-managed": "false" } } });
      await run.waitFor(() => r.store.size === 0, "left");
      e.sandbox.patch("services", "flyte", "a", { metadata: { labels: { "flyte.org/app-managed": "true" } } });
      await run.waitFor(() => r.store.size === 1, "back");
      assert.deepEqual(summary(run.events).map((s) => s.replace(/@\d+/, "")), ["added flyte/a", "synced initial", "deleted flyte/a", "added flyte/a"]);
    } finally {
      await run.stop();
      await e.close();
    }
  });

  test("several namespaces: one merged stream, one initial synced marker, one consistent snapshot; all namespaces too", async () => {
    const e = await env();
    for (const ns of ["team-a", "team-b", "other"]) e.sandbox.create("services", ksvc(`app-${ns}`, { ns }));
    const client = new KubeClient({ server: e.url });
    const common = { client, resource: KNATIVE_SERVICES, labelSelector: SELECTOR, initialList: "paginated" as const, backoff: { initialMs: 5, maxMs: 50 } };
    const w = createWatcher({ ...common, namespaces: ["team-a", "team-b"] });
    const all = createWatcher({ ...common });
    const ac = new AbortController();
    const got: ReflectorEvent[] = [];
    const gotAll: ReflectorEvent[] = [];
    const loops = [
      (async () => {
        for await (const ev of w.run(ac.signal)) got.push(ev);
      })(),
      (async () => {
        for await (const ev of all.run(ac.signal)) gotAll.push(ev);
      })(),
    ];
    try {
      await waitFor(() => w.synced && all.synced, "synced");
      assert.equal(got.filter((x) => x.type === "synced").length, 1);
      assert.equal(got.at(-1)!.type, "synced");
      assert.deepEqual(w.snapshot().items.map((o) => o.metadata.name), ["app-team-a", "app-team-b"]);
      assert.deepEqual(all.snapshot().items.map((o) => o.metadata.name), ["app-other", "app-team-a", "app-team-b"]);
      e.sandbox.create("services", ksvc("late", { ns: "team-b" }));
      e.sandbox.create("services", ksvc("ignored", { ns: "other" }));
      await waitFor(() => w.snapshot().items.length === 3 && all.snapshot().items.length === 5, "live");
      assert.equal(w.metricsSnapshot().lists, 2);
      assert.deepEqual(fingerprint(strictReplay(got).values()), fingerprint(w.snapshot().items));
    } finally {
      ac.abort();
      await Promise.all(loops);
      await e.close();
    }
  });
});

/** Tracks timers created while installed; `live()` = created and neither fired (timeouts) nor cleared. */
function trackTimers(): { live(): number; restore(): void } {
  const g = globalThis as unknown as Record<string, (...a: unknown[]) => unknown>;
  const orig = { setTimeout: g.setTimeout!, clearTimeout: g.clearTimeout!, setInterval: g.setInterval!, clearInterval: g.clearInterval! };
  const live = new Set<unknown>();
  g.setTimeout = (fn: unknown, ms?: unknown, ...rest: unknown[]) => {
    const id: unknown = orig.setTimeout((...a: unknown[]) => {
      live.delete(key(id));
      (fn as (...x: unknown[]) => void)(...a);
    }, ms, ...rest);
    live.add(key(id));
    return id;
  };
  g.setInterval = (fn: unknown, ms?: unknown, ...rest: unknown[]) => {
    const id = orig.setInterval(fn, ms, ...rest);
    live.add(key(id));
    return id;
  };
  g.clearTimeout = (id: unknown) => {
    live.delete(key(id));
    return orig.clearTimeout(id);
  };
  g.clearInterval = (id: unknown) => {
    live.delete(key(id));
    return orig.clearInterval(id);
  };
  return {
    live: () => live.size,
    restore: () => Object.assign(g, orig),
  };
}

// Node timer objects and numeric ids (Deno, Bun) both work as Set keys; normalise to a primitive where possible.
function key(id: unknown): unknown {
  if (id && typeof id === "object" && Symbol.toPrimitive in (id as object)) return Number(id);
  return id;
}

describe("byte-level prune on paginated list pages", () => {
  /** A KService with managedFields, a spec and a status full of the bytes a scanner must get right. */
  function rich(i: number): KubeObject {
    const o = ksvc(`app-${String(i).padStart(2, "0")}`, { image: `app:v${i}` });
    o.metadata.annotations = { note: `quote " brace } bracket ] backslash \\ é☕ ${i}`, "spec": "not the spec" };
    o.metadata.managedFields = [
      { manager: "kubectl", operation: "Update", fieldsV1: { "f:spec": { "f:template": { ".": {}, "f:x": {} } }, "f:metadata": { "f:labels": { "f:a]": {} } } } },
      { manager: "controller", subresource: "status", fieldsV1: { "f:status": {} } },
    ];
    (o.spec as Record<string, unknown>).traffic = [{ percent: 100, latestRevision: true, tag: "}]\"" }];
    o.status = { observedGeneration: i, conditions: [{ type: "Ready", status: "True", message: `ok ] } " ${i}` }], spec: { kept: true } };
    return o;
  }

  function withoutCut(o: KubeObject): KubeObject {
    const c = structuredClone(o);
    delete c.spec;
    delete c.metadata.managedFields;
    return c;
  }

  const PRUNE = [["object", "metadata", "managedFields"], ["object", "spec"]];

  for (const drip of [false, true]) {
    test(`a pruned paginated list yields the objects without managedFields and spec, identical otherwise${drip ? " (list bodies dripped in small chunks, no Content-Length)" : ""}; watch events too`, async () => {
      const e = await env();
      for (let i = 0; i < 23; i++) e.sandbox.create("services", rich(i));
      if (drip) e.sandbox.faults.add({ verb: "list", times: Infinity, action: { type: "drip", chunkBytes: 333, delayMs: 0 } });
      const full = reflectorFor(e, { pageSize: 5 });
      const pruned = reflectorFor(e, { pageSize: 5, prune: PRUNE });
      const runs = [start(full), start(pruned)];
      try {
        for (const run of runs) await run.waitFor(() => full.synced && pruned.synced && e.sandbox.activeWatches() === 2, "both synced and watching");
        assert.ok(listRequests(e.sandbox).filter((x) => x.query.continue).length >= 8, "several pages each");
        assert.equal(pruned.store.size, 23);
        const f = full.snapshot().items;
        const p = pruned.snapshot().items;
        assert.ok(f.every((o) => o.spec !== undefined), "the unpruned reflector keeps spec (the sandbox itself drops managedFields)");
        assert.deepEqual(p, f.map(withoutCut));
        assert.equal(pruned.metrics.listPages, full.metrics.listPages);
        // A watch event after the sync: pruned by the same option.
        e.sandbox.patch("services", "flyte", "app-03", { metadata: { labels: { extra: "x" } } });
        for (const run of runs) await run.waitFor(() => full.store.get("flyte/app-03")?.metadata.labels?.extra === "x" && pruned.store.get("flyte/app-03")?.metadata.labels?.extra === "x", "the change");
        assert.deepEqual(pruned.store.get("flyte/app-03"), withoutCut(full.store.get("flyte/app-03")!));
      } finally {
        for (const run of runs) await run.stop();
        await e.close();
      }
    });
  }

  test("managedFields too (a scripted list server: the sandbox drops managedFields): 4 pages, odd chunks, with and without Content-Length", async () => {
    const objects = Array.from({ length: 17 }, (_, i) => {
      const o = rich(i);
      o.metadata.resourceVersion = String(100 + i);
      o.metadata.uid = `uid-${i}`;
      return o;
    });
    const enc = new TextEncoder();
    const client = (contentLength: boolean) => ({
      request: (req: Parameters<KubeClient["request"]>[0]) => {
        if (req.query?.watch !== undefined) {
          // A watch that stays open and quiet until aborted.
          return Promise.resolve(new Response(new ReadableStream({ start(c) { req.signal?.addEventListener("abort", () => c.error(req.signal!.reason)); } })));
        }
        const from = Number(req.query?.continue ?? 0);
        const limit = Number(req.query?.limit ?? objects.length);
        const next = from + limit < objects.length ? String(from + limit) : "";
        const body = enc.encode(JSON.stringify({ apiVersion: "serving.knative.dev/v1", kind: "ServiceList", metadata: { resourceVersion: "500", continue: next }, items: objects.slice(from, from + limit) }));
        let at = 0;
        const stream = new ReadableStream<Uint8Array>({
          pull(c) {
            if (at >= body.length) return c.close();
            const n = 1 + ((at * 7919) % 997);
            c.enqueue(body.slice(at, at + n));
            at += n;
          },
        });
        return Promise.resolve(new Response(stream, { headers: contentLength ? { "content-length": String(body.length) } : {} }));
      },
    }) as unknown as KubeClient;
    for (const contentLength of [true, false]) {
      const e = { url: "http://unused" } as Env;
      const full = reflectorFor(e, { pageSize: 5 }, client(contentLength));
      const pruned = reflectorFor(e, { pageSize: 5, prune: PRUNE }, client(contentLength));
      const runs = [start(full), start(pruned)];
      try {
        for (const run of runs) await run.waitFor(() => full.synced && pruned.synced, "both synced");
        const f = full.snapshot().items;
        assert.equal(f.length, 17);
        assert.ok(f.every((o) => o.spec !== undefined && o.metadata.managedFields !== undefined));
        assert.deepEqual(pruned.snapshot().items, f.map(withoutCut));
        assert.equal(pruned.metrics.listPages, 4);
        assert.equal(pruned.metrics.bytes, full.metrics.bytes, "the bytes read are counted before pruning");
      } finally {
        for (const run of runs) await run.stop();
      }
    }
  });

  test("a malformed list page is still reported by JSON.parse (pruning passes it through), and the reflector retries", async () => {
    const e = await env();
    e.sandbox.create("services", rich(1));
    const real = new KubeClient({ server: e.url });
    const bad = `{"kind":"List","metadata":{"resourceVersion":"1"},"items":[{"spec":1,"metadata":{"name":"x"}},]}`;
    let served = 0;
    const errors: string[] = [];
    const client = {
      request: (req: Parameters<KubeClient["request"]>[0]) => {
        if (req.query?.watch === undefined && served++ === 0) return Promise.resolve(new Response(bad, { headers: { "content-length": String(bad.length) } }));
        return real.request(req);
      },
    } as unknown as KubeClient;
    const r = reflectorFor(e, { prune: PRUNE, logger: createLogger({ level: "debug", sink: (line) => errors.push(line) }) }, client);
    const run = start(r);
    try {
      await run.waitFor(() => r.synced, "synced after the retry");
      assert.deepEqual(r.snapshot().items, [withoutCut(e.sandbox.list("services", "flyte")[0]!)]);
      assert.ok(errors.some((m) => /JSON/.test(m)), `the parse error was reported: ${errors.join(" | ")}`);
    } finally {
      await run.stop();
      await e.close();
    }
  });
});
