/**
 * The reflector's timing rules on a virtual clock, against an in-memory API
 * (a `fetch` the test answers by hand): idle timeout, connect timeout,
 * backoff growth, cap and reset, short-watch detection, and health. No test
 * here waits for real time: each step waits for a signal (a request arrived,
 * a timer was set, an event was yielded) and moves the clock itself. The
 * service's own timing (catch-up deadline, heartbeats) runs on the same clock.
 */
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { AppK8sClient } from "../src/flyte/app-client.ts";
import { AppHub } from "../src/flyte/hub.ts";
import { encodeToken } from "../src/flyte/journal.ts";
import { KubeClient } from "../src/kube/client.ts";
import { createLogger, silentLogger } from "../src/log.ts";
import { startSandbox } from "../src/sandbox/mod.ts";
import { createApp } from "../src/service/app.ts";
import { Backoff } from "../src/watch/backoff.ts";
import { VirtualClock } from "../src/watch/clock.ts";
import { createWatcher } from "../src/watch/group.ts";
import { Reflector, type ReflectorOptions } from "../src/watch/reflector.ts";
import { KNATIVE_SERVICES, type KubeObject, type ReflectorEvent } from "../src/watch/types.ts";
import { within } from "./helpers/within.ts";

const enc = new TextEncoder();

interface FakeRequest {
  path: string;
  query: Record<string, string>;
  signal: AbortSignal;
  respond(res: Response): void;
  fail(err: unknown): void;
}

/** An API server in memory: each request waits until the test answers it. */
class FakeApi {
  readonly requests: FakeRequest[] = [];
  /** When set, requests never settle on abort (a fetch that ignores its signal until headers). */
  ignoreAbort = false;
  readonly #waiters: { n: number; resolve: (r: FakeRequest) => void }[] = [];

  readonly fetch = (input: string, init: RequestInit): Promise<Response> =>
    new Promise<Response>((resolve, reject) => {
      const url = new URL(input);
      const signal = init.signal ?? new AbortController().signal;
      const req: FakeRequest = { path: url.pathname, query: Object.fromEntries(url.searchParams), signal, respond: resolve, fail: reject };
      if (!this.ignoreAbort) {
        if (signal.aborted) return reject(signal.reason);
        signal.addEventListener("abort", () => reject(signal.reason), { once: true });
      }
      this.requests.push(req);
      for (const w of [...this.#waiters]) {
        if (this.requests.length >= w.n) {
          this.#waiters.splice(this.#waiters.indexOf(w), 1);
          w.resolve(this.requests[w.n - 1]!);
        }
      }
    });

  /** The n-th request (1-based), now or once it arrives. */
  request(n: number): Promise<FakeRequest> {
    if (this.requests.length >= n) return Promise.resolve(this.requests[n - 1]!);
    return within(new Promise((resolve) => this.#waiters.push({ n, resolve })), `request #${n} (got ${this.requests.length})`);
  }

  watches(): FakeRequest[] {
    return this.requests.filter((r) => r.query.watch);
  }
}

/** A watch body the test writes to. */
class Feed {
  #c!: ReadableStreamDefaultController<Uint8Array>;
  readonly stream = new ReadableStream<Uint8Array>({ start: (c) => void (this.#c = c) });
  send(type: string, object: unknown): void {
    this.#c.enqueue(enc.encode(JSON.stringify({ type, object }) + "\n"));
  }
  close(): void {
    this.#c.close();
  }
  error(err: unknown): void {
    this.#c.error(err);
  }
  response(): Response {
    return new Response(this.stream, { headers: { "content-type": "application/json" } });
  }
}

function obj(name: string, rv: string): KubeObject {
  return { apiVersion: "serving.knative.dev/v1", kind: "Service", metadata: { name, namespace: "ns", uid: `uid-${name}`, resourceVersion: rv }, spec: {} };
}

function listResponse(items: KubeObject[], rv: string): Response {
  return new Response(JSON.stringify({ kind: "ServiceList", metadata: { resourceVersion: rv }, items }), { headers: { "content-type": "application/json" } });
}

const refused = () => new TypeError("fetch failed: connect ECONNREFUSED");

/** Consumes a run in the background; `until(n)` resolves once n events were yielded. */
function consume(r: { run(signal?: AbortSignal): AsyncGenerator<ReflectorEvent, void, undefined> }) {
  const ac = new AbortController();
  const events: ReflectorEvent[] = [];
  const waiters: { n: number; resolve: () => void }[] = [];
  let pulling = false;
  const done = (async () => {
    const it = r.run(ac.signal);
    for (;;) {
      const next = it.next();
      pulling = true;
      // Settle waiters only once the reflector was asked for more: it is then waiting on the network, not on us.
      for (const w of waiters.filter((w) => events.length >= w.n)) {
        waiters.splice(waiters.indexOf(w), 1);
        w.resolve();
      }
      const res = await next;
      pulling = false;
      if (res.done) return;
      events.push(res.value);
    }
  })();
  return {
    events,
    until: (n: number) =>
      within(new Promise<void>((resolve) => (pulling && events.length >= n ? resolve() : waiters.push({ n, resolve }))), `${n} events (got ${events.length})`),
    stop: async () => {
      ac.abort();
      await within(done, "run() to end");
    },
  };
}

function setup(options: Partial<ReflectorOptions<KubeObject>> = {}) {
  const api = new FakeApi();
  const clock = new VirtualClock(1_000_000);
  const logs: { level: string; msg: string }[] = [];
  const logger = createLogger({ level: "debug", sink: (l) => logs.push(JSON.parse(l)) });
  const client = new KubeClient({ server: "http://fake.invalid", fetch: api.fetch });
  const r = new Reflector({
    client,
    resource: KNATIVE_SERVICES,
    namespace: "ns",
    initialList: "paginated",
    clock,
    random: () => 0.5,
    logger,
    ...options,
  });
  return { api, clock, r, logs, client };
}

/** List answered with `items`, then the first watch answered with a feed. */
async function syncAndWatch(s: ReturnType<typeof setup>, c: ReturnType<typeof consume>, items: KubeObject[] = [], rv = "5") {
  (await s.api.request(1)).respond(listResponse(items, rv));
  const feed = new Feed();
  (await s.api.request(2)).respond(feed.response());
  await c.until(items.length + 1);
  return feed;
}

describe("timing rules on a virtual clock", () => {
  test("idle timeout: a watch silent for idleTimeoutMs is aborted and resumed from the last RV at once, without backoff", async () => {
    const s = setup({ idleTimeoutMs: 60_000 });
    const c = consume(s.r);
    try {
      const feed = await syncAndWatch(s, c);
      feed.send("ADDED", obj("a", "6"));
      await c.until(2);
      s.clock.advance(59_999);
      assert.equal(s.api.requests.length, 2, "not before the idle budget");
      s.clock.advance(1);
      const w2 = await s.api.request(3);
      assert.equal(w2.query.resourceVersion, "6");
      assert.equal(w2.query.watch, "1");
      assert.equal(s.r.metrics.reconnects.idle, 1);
      assert.equal(s.r.metrics.failures, 0, "an idle reconnect after the server answered is no failure");
      assert.equal(s.api.requests[1]!.signal.aborted, true, "the silent connection was aborted");
    } finally {
      await c.stop();
    }
  });

  test("a consumer holding an event pauses the idle timer", async () => {
    const s = setup({ idleTimeoutMs: 60_000 });
    const ac = new AbortController();
    const it = s.r.run(ac.signal);
    try {
      const first = it.next();
      (await s.api.request(1)).respond(listResponse([], "5"));
      assert.equal((await first).value?.type, "synced");
      const second = it.next();
      const feed = new Feed();
      (await s.api.request(2)).respond(feed.response());
      feed.send("ADDED", obj("a", "6"));
      assert.equal((await second).value?.type, "added");
      // We hold "added": five idle budgets pass, and the connection stays.
      s.clock.advance(300_000);
      assert.equal(s.api.requests.length, 2);
      assert.equal(s.api.requests[1]!.signal.aborted, false);
      const third = it.next(); // taken: the budget counts again from now
      s.clock.advance(59_999);
      assert.equal(s.api.requests[1]!.signal.aborted, false);
      s.clock.advance(1);
      await s.api.request(3);
      ac.abort();
      await within(third, "run() to end");
    } finally {
      ac.abort();
      await it.return(undefined);
    }
  });

  test("backoff grows with consecutive failures, and starts over after 2 minutes without one", async () => {
    const s = setup({ backoff: { initialMs: 800, factor: 2, maxMs: 30_000, jitter: 0 } });
    const c = consume(s.r);
    try {
      const delays: number[] = [];
      for (let n = 1; n <= 4; n++) {
        (await s.api.request(n)).fail(refused());
        const t = await within(s.clock.next("backoff"), `backoff #${n}`);
        delays.push(t.delay);
        s.clock.advanceTo(t.due);
      }
      assert.deepEqual(delays, [800, 1600, 3200, 6400]);
      // Healthy for 2+ minutes, then one failure: from the start again.
      (await s.api.request(5)).respond(listResponse([obj("a", "5")], "5"));
      const feed = new Feed();
      (await s.api.request(6)).respond(feed.response());
      await c.until(2);
      for (let i = 0; i < 5; i++) {
        s.clock.advance(30_000);
        feed.send("MODIFIED", obj("a", String(10 + i)));
        await c.until(3 + i);
      }
      feed.error(new TypeError("network error"));
      const t = await within(s.clock.next("backoff"), "backoff after the cut");
      assert.equal(t.delay, 800);
      s.clock.advanceTo(t.due);
      assert.equal((await s.api.request(7)).query.resourceVersion, "14");
    } finally {
      await c.stop();
    }
  });

  test("short-watch detection (W11): a watch that closes in under 1 s with no events backs off; one that lasted 1 s re-watches at once", async () => {
    const s = setup({ backoff: { initialMs: 800, maxMs: 8_000, jitter: 0 } });
    const c = consume(s.r);
    try {
      const first = await syncAndWatch(s, c);
      first.close(); // at once, nothing sent
      const t = await within(s.clock.next("backoff"), "backoff after a very short watch");
      assert.equal(t.delay, 800);
      assert.equal(s.r.metrics.failures, 1);
      s.clock.advanceTo(t.due);
      const second = new Feed();
      (await s.api.request(3)).respond(second.response());
      s.clock.advance(1_000);
      second.close(); // empty, but it lasted 1 s: a normal end (W6)
      const w3 = await s.api.request(4);
      assert.equal(w3.query.resourceVersion, "5");
      assert.equal(s.clock.pending("backoff").length, 0, "no backoff before the re-watch");
      assert.equal(s.r.metrics.failures, 1);
    } finally {
      await c.stop();
    }
  });
});

describe("readiness and recovery", () => {
  test("health turns unhealthy, with a reason, when the idle timer fires, and stays so until a new watch is answered; the idle reconnect logs at debug", async () => {
    const s = setup({ idleTimeoutMs: 60_000, connectTimeoutMs: 10_000 });
    const c = consume(s.r);
    try {
      const feed = await syncAndWatch(s, c);
      feed.send("ADDED", obj("a", "6"));
      await c.until(2);
      assert.equal(s.r.health.healthy, true);
      s.clock.advance(60_000); // the API server stopped answering (SIGSTOP): silence
      assert.equal(s.r.health.healthy, false, "unhealthy within the idle timeout");
      assert.match(s.r.health.reason ?? "", /idle|no data/);
      assert.equal(s.r.health.since, s.clock.now());
      await s.api.request(3); // the reconnect is sent, and not answered either
      s.clock.advance(5_000);
      assert.equal(s.r.health.healthy, false, "still unhealthy while the new watch is unanswered");
      const next = new Feed();
      s.api.requests[2]!.respond(next.response());
      next.send("MODIFIED", obj("a", "7"));
      await c.until(3);
      assert.equal(s.r.health.healthy, true, "healthy once a new watch is answered");
      const idleLogs = s.logs.filter((l) => /idle/.test(l.msg));
      assert.ok(idleLogs.length > 0, "the idle reconnect is logged");
      assert.ok(idleLogs.every((l) => l.level === "debug"), `idle reconnect logged at ${idleLogs.map((l) => l.level)}`);
    } finally {
      await c.stop();
    }
  });

  test("several namespaces: the watcher's health names the namespace whose watch went idle", async () => {
    const api = new FakeApi();
    const clock = new VirtualClock(0);
    const w = createWatcher({
      client: new KubeClient({ server: "http://fake.invalid", fetch: api.fetch }),
      resource: KNATIVE_SERVICES,
      namespaces: ["a", "b"],
      initialList: "paginated",
      idleTimeoutMs: 60_000,
      clock,
      random: () => 0.5,
    });
    const c = consume(w);
    try {
      const feeds = new Map<string, Feed>();
      for (let n = 1; n <= 4; n++) {
        const req = await api.request(n);
        const ns = req.path.split("/")[5]!;
        if (!req.query.watch) req.respond(listResponse([], "5"));
        else {
          const f = new Feed();
          feeds.set(ns, f);
          req.respond(f.response());
        }
      }
      await c.until(1);
      assert.equal(w.health().healthy, true);
      clock.advance(60_000);
      assert.equal(w.health().healthy, false);
      assert.match(w.health().reason ?? "", /^namespace a: .*(idle|no data)/);
    } finally {
      await c.stop();
    }
  });

  test("connect timeout: a request whose fetch ignores its abort signal and never gets headers fails after connectTimeoutMs, and is retried", async () => {
    const s = setup({ idleTimeoutMs: 60_000, connectTimeoutMs: 10_000, backoff: { initialMs: 800, maxMs: 8_000, jitter: 0 } });
    s.api.ignoreAbort = true; // the worst case: a fetch with no connect timeout that ignores its abort
    const c = consume(s.r);
    try {
      await s.api.request(1); // the list: never answered
      s.clock.advance(10_000);
      const t = await within(s.clock.next("backoff"), "a backoff after the connect timeout");
      assert.equal(s.r.health.healthy, false);
      assert.match(s.r.health.reason ?? "", /timeout|timed out/i);
      s.clock.advanceTo(t.due);
      (await s.api.request(2)).respond(listResponse([], "5"));
      // The watch: answered at once, then a slow drip; the connect timeout ends with the headers.
      const feed = new Feed();
      (await s.api.request(3)).respond(feed.response());
      await c.until(1);
      for (let i = 0; i < 6; i++) {
        s.clock.advance(9_000);
        feed.send("MODIFIED", obj("a", String(10 + i)));
        await c.until(2 + i);
      }
      assert.equal(s.api.requests.length, 3, "a slow stream after its headers is not cut by the connect timeout");
      assert.equal(s.r.metrics.reconnects.network + s.r.metrics.reconnects.idle, 0);
    } finally {
      await c.stop();
    }
  });

  test("connect timeout applies to watches too: a half-open reconnect is given up after connectTimeoutMs, not after the idle budget", async () => {
    const s = setup({ idleTimeoutMs: 60_000, connectTimeoutMs: 10_000, backoff: { initialMs: 800, maxMs: 8_000, jitter: 0 } });
    const c = consume(s.r);
    try {
      const feed = await syncAndWatch(s, c);
      feed.error(new TypeError("network error"));
      const b1 = await within(s.clock.next("backoff"), "backoff after the cut");
      s.clock.advanceTo(b1.due);
      s.api.ignoreAbort = true;
      await s.api.request(3);
      s.clock.advance(10_000);
      const b2 = await within(s.clock.next("backoff"), "backoff after the connect timeout");
      s.api.ignoreAbort = false;
      s.clock.advanceTo(b2.due);
      const w = await s.api.request(4);
      assert.equal(w.query.resourceVersion, "5");
    } finally {
      await c.stop();
    }
  });

  test("recovery: after 10 failures the next attempt comes within the 8 s cap for any jitter draw; a healthy watch resets the backoff", async () => {
    for (const draw of [0, 0.5, 0.999999]) {
      const s = setup({ random: () => draw }); // default backoff
      const c = consume(s.r);
      try {
        const delays: number[] = [];
        for (let n = 1; n <= 10; n++) {
          (await s.api.request(n)).fail(refused());
          const t = await within(s.clock.next("backoff"), `backoff #${n}`);
          delays.push(t.delay);
          s.clock.advanceTo(t.due);
        }
        assert.ok(delays.every((d) => d <= 8_000), `draw ${draw}: delays ${delays.map(Math.round)} exceed the cap`);
        assert.ok(delays.slice(3).every((d) => d >= 1_000), `draw ${draw}: at most ~1 request/s once the first retries failed: ${delays.map(Math.round)}`);
        // The API answers again: the list, then a watch that delivers, then a cut.
        (await s.api.request(11)).respond(listResponse([], "5"));
        const feed = new Feed();
        (await s.api.request(12)).respond(feed.response());
        feed.send("ADDED", obj("a", "6"));
        await c.until(2);
        feed.error(new TypeError("network error"));
        const t = await within(s.clock.next("backoff"), "backoff after recovery");
        assert.ok(t.delay <= 800, `draw ${draw}: the backoff starts over after a healthy watch (got ${Math.round(t.delay)} ms)`);
      } finally {
        await c.stop();
      }
    }
  });

  test("jitter: 100 replicas failing together spread their retries; a Backoff never exceeds its cap", () => {
    let seed = 42;
    const random = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
    const atCap = Array.from({ length: 100 }, () => {
      const b = new Backoff({}, random);
      let d = 0;
      for (let i = 0; i < 12; i++) d = b.next();
      return d;
    });
    assert.ok(atCap.every((d) => d <= 8_000), `delays at the cap: ${atCap.map(Math.round).slice(0, 5)}…`);
    assert.ok(new Set(atCap.map(Math.round)).size > 90, "no two replicas retry in lockstep");
    assert.ok(Math.max(...atCap) - Math.min(...atCap) > 2_000, `spread ${Math.max(...atCap) - Math.min(...atCap)} ms`);
  });
});

describe("the service's timing rules on a virtual clock", () => {
  test("catch-up: a token from a replica ahead is waited for until the journal covers it, or exactly catchUpMs", async () => {
    const clock = new VirtualClock();
    const hub = new AppHub({ policy: "coalesce", bufferSize: 10, resumeWindow: 10, logger: silentLogger, metrics: hubMetrics(), clock });
    hub.synced({ flyte: "10" });
    const ahead = encodeToken({ flyte: "20" });
    const caught = hub.catchUp(ahead, 2_000);
    const timer = await within(clock.next("catch-up"), "the catch-up deadline to be set");
    assert.equal(timer.delay, 2_000);
    hub.advance("flyte", "15");
    clock.advance(1_000);
    hub.advance("flyte", "20"); // the journal moved past the token: woken at once, before the deadline
    assert.equal(await within(caught, "catch-up to resolve"), true);
    assert.equal(clock.pending("catch-up").length, 0, "the deadline is cleared");

    const never = hub.catchUp(encodeToken({ flyte: "99" }), 2_000);
    let settled = false;
    never.then(() => (settled = true));
    clock.advance(1_999);
    await Promise.resolve();
    assert.equal(settled, false, "still waiting 1 ms before the deadline");
    clock.advance(1);
    assert.equal(await within(never, "catch-up to give up"), false);
  });

  test("heartbeats: a stream gets one per heartbeat period of the service's clock, and none once it is closed", async () => {
    const sb = await startSandbox({ bookmarkIntervalMs: 0 });
    const apps = new AppK8sClient({ client: new KubeClient({ server: sb.url }), namespace: "flyte", replicas: false });
    const clock = new VirtualClock();
    try {
      await apps.startWatching();
      const api = createApp({ client: apps, clock, limits: { heartbeatMs: 15_000 } });
      const res = await api.app.fetch(new Request("http://x/v1/watch?snapshot=false", { headers: { accept: "text/event-stream" } }));
      assert.equal(res.status, 200);
      const reader = res.body!.getReader();
      let text = "";
      const next = async (what: string) => {
        while (!text.includes(`event: ${what}`) || !text.endsWith("\n\n")) {
          const { value, done } = await within(reader.read(), `an SSE ${what} record (so far: ${JSON.stringify(text)})`);
          if (done) throw new Error(`the stream ended before ${what}`);
          text += new TextDecoder().decode(value);
        }
      };
      await next("start"); // live: no snapshot, so no synced marker
      assert.equal(text.includes("event: heartbeat"), false, "no heartbeat before a period has passed");
      clock.advance(14_999);
      assert.equal(text.includes("event: heartbeat"), false);
      clock.advance(1);
      await next("heartbeat");
      assert.equal(text.split("event: heartbeat").length - 1, 1, "one heartbeat in one period");
      assert.equal(api.heartbeatStats().running, true);
      await reader.cancel();
      await within(api.whenClosed(60_000), "the stream to close");
      assert.deepEqual({ callbacks: api.heartbeatStats().callbacks, running: api.heartbeatStats().running }, { callbacks: 0, running: false });
      assert.equal(clock.pending("tick").length, 0, "no heartbeat timer once no stream is open");
    } finally {
      await apps.stopWatching();
      await sb.close();
    }
  });
});

function hubMetrics() {
  return { events: { create: 0, update: 0, delete: 0 }, unchanged: 0, subscribers: 0, starts: { snapshot: 0, resumed: 0, live: 0, resumeFailed: 0 } };
}
