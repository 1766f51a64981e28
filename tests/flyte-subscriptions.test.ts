import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { createLogger } from "../src/log.ts";
import type { App, WatchResponse } from "../src/flyte/model.ts";
import type { AppChange } from "../src/flyte/journal.ts";
import { LaggingError, Subscription } from "../src/flyte/subscriptions.ts";

const app = (name: string, v: number): App => ({ metadata: { id: { org: "flyte", project: "p", domain: "d", name } }, status: { currentReplicas: v } });
const create = (name: string, v = 0): AppChange => ({ key: `flyte/p/d/${name}`, event: { createEvent: { app: app(name, v) } } });
const update = (name: string, v: number): AppChange => ({ key: `flyte/p/d/${name}`, event: { updateEvent: { updatedApp: app(name, v) } } });
const del = (name: string, v = 0): AppChange => ({ key: `flyte/p/d/${name}`, event: { deleteEvent: { app: app(name, v) } } });

/** One macrotask turn: every pending microtask (a consumer's next pull included) has run. */
const turn = () => new Promise<void>((resolve) => setTimeout(resolve, 0));
/** Turns until `done()`: waits for an outcome, never for a duration. */
async function until(done: () => boolean): Promise<void> {
  while (!done()) await turn();
}

function show(e: WatchResponse): string {
  if ("createEvent" in e) return `create ${e.createEvent.app.metadata!.id!.name}@${e.createEvent.app.status?.currentReplicas ?? 0}`;
  if ("updateEvent" in e) return `update ${e.updateEvent.updatedApp.metadata!.id!.name}@${e.updateEvent.updatedApp.status?.currentReplicas ?? 0}`;
  return `delete ${e.deleteEvent.app.metadata!.id!.name}`;
}

/** Reads n events without ending the subscription (leaving a for-await loop closes it). */
async function take(s: Subscription, n: number): Promise<string[]> {
  let it = readers.get(s);
  if (!it) readers.set(s, (it = s[Symbol.asyncIterator]()));
  const out: string[] = [];
  while (out.length < n) {
    const r = await it.next();
    if (r.done) break;
    out.push(show(r.value));
  }
  return out;
}
const readers = new WeakMap<Subscription, AsyncIterator<WatchResponse>>();

/** Reads until the subscription ends. */
async function drain(s: Subscription): Promise<string[]> {
  return await take(s, Infinity);
}

describe("Subscription: bounded buffers and slow-consumer policies", () => {
  test("under its buffer size every event is delivered in order", async () => {
    const t = new Subscription({ policy: "drop", bufferSize: 10 });
    for (const c of [create("a"), update("a", 1), create("b"), del("a")]) assert.equal(t.push(c), true);
    assert.deepEqual(await take(t, 4), ["create a@0", "update a@1", "create b@0", "delete a"]);
  });

  test("close() ends a consumer that is waiting for events", async () => {
    const s = new Subscription({ policy: "coalesce", bufferSize: 10 });
    const reading = drain(s);
    await turn(); // the consumer is now waiting for an event
    s.close();
    assert.deepEqual(await reading, []);
    assert.equal(s.push(create("late")), false, "a closed subscription takes nothing");
  });

  test("drop: Flyte's behaviour — dropped, logged with Flyte's message, counted", async () => {
    const lines: string[] = [];
    const s = new Subscription({ policy: "drop", bufferSize: 2, logger: createLogger({ sink: (l) => lines.push(l) }) });
    const pushed = [create("a"), create("b"), create("c"), update("a", 5)].map((c) => s.push(c));
    assert.deepEqual(pushed, [true, true, false, false]);
    assert.equal(s.stats().dropped, 2);
    assert.match(lines[0]!, /"msg":"subscriber channel full, dropping update for app: c"/);
    assert.deepEqual(await take(s, 2), ["create a@0", "create b@0"]);
  });

  test("disconnect: the subscription ends with a typed LaggingError", async () => {
    const s = new Subscription({ policy: "disconnect", bufferSize: 2 });
    s.push(create("a"));
    s.push(create("b"));
    assert.equal(s.push(create("c")), false);
    assert.equal(s.closed, true);
    await assert.rejects(drain(s), (e: unknown) => e instanceof LaggingError && /resubscribe with a snapshot/.test(e.message));
  });

  test("coalesce: create then delete of an app the consumer never saw → nothing", async () => {
    const s = new Subscription({ policy: "coalesce", bufferSize: 1 });
    s.push(create("filler"));
    s.push(create("x"));
    s.push(del("x"));
    s.push(create("end"));
    assert.deepEqual(await take(s, 2), ["create filler@0", "create end@0"]);
  });

  test("coalesce: delete then create of a known app → create (latest)", async () => {
    const s = new Subscription({ policy: "coalesce", bufferSize: 1 });
    s.push(create("x"));
    assert.deepEqual(await take(s, 1), ["create x@0"]);
    s.push(create("filler"));
    s.push(del("x"));
    s.push(create("x", 7));
    assert.deepEqual(await take(s, 2), ["create filler@0", "create x@7"]);
  });

  test("coalesce: create then update → one create with the latest app; update then delete → delete", async () => {
    const s = new Subscription({ policy: "coalesce", bufferSize: 1 });
    s.push(create("known"));
    assert.deepEqual(await take(s, 1), ["create known@0"]);
    s.push(create("filler"));
    s.push(create("fresh", 1));
    s.push(update("fresh", 2));
    s.push(update("known", 3));
    s.push(del("known", 3));
    assert.deepEqual(await take(s, 3), ["create filler@0", "create fresh@2", "delete known"]);
    assert.ok(s.stats().coalesced >= 2);
  });

  for (const policy of ["drop", "disconnect"] as const) {
    test(`a 50,000-event burst with one stalled subscriber under ${policy}: bounded memory, the fast one gets every change in order`, async () => {
      const stalled = new Subscription({ policy, bufferSize: 100 });
      const fast = new Subscription({ policy, bufferSize: 100 });
      const sent: string[] = [];
      const seen: string[] = [];
      const reader = (async () => {
        for await (const e of fast) seen.push(show(e));
      })();
      let maxPending = 0;
      for (let i = 0; i < 50_000; i++) {
        const c = i % 3 === 0 ? create(`app-${i}`, i) : update(`app-${i - (i % 3)}`, i);
        sent.push(show(c.event));
        stalled.push(c);
        fast.push(c);
        maxPending = Math.max(maxPending, stalled.stats().pending);
        if (i % 50 === 0) await turn();
      }
      await until(() => seen.length === sent.length);
      fast.close();
      await reader;
      assert.ok(maxPending <= 100, `pending peaked at ${maxPending}`);
      assert.deepEqual(seen, sent, "the fast subscriber got every change, in order");
      if (policy === "drop") {
        assert.equal(stalled.stats().dropped, 50_000 - 100);
        assert.equal((await take(stalled, 100)).length, 100);
      } else {
        assert.equal(stalled.closed, true);
        await assert.rejects(drain(stalled), LaggingError);
      }
    });
  }

  test("a 50,000-event burst with a stalled subscriber: memory bounded by the number of apps, convergence to the final state", async () => {
    const apps = 200;
    const slow = new Subscription({ policy: "coalesce", bufferSize: 100 });
    const fast = new Subscription({ policy: "coalesce", bufferSize: 100 });
    const fastSeen: string[] = [];
    const truth = new Map<string, number | undefined>();
    let maxPending = 0;
    let v = 0;
    const fastLoop = (async () => {
      for await (const e of fast) fastSeen.push(show(e));
    })();
    for (let i = 0; i < 50_000; i++) {
      const name = `app-${i % apps}`;
      const exists = truth.get(name) !== undefined;
      const c = !exists ? create(name, ++v) : i % 7 === 0 ? del(name) : update(name, ++v);
      truth.set(name, "deleteEvent" in c.event ? undefined : v);
      slow.push(c);
      fast.push(c);
      maxPending = Math.max(maxPending, slow.stats().pending);
      if (i % 100 === 0) await turn(); // the fast consumer keeps up
    }
    assert.ok(maxPending <= apps + 100, `pending peaked at ${maxPending}`);
    // The stalled subscriber now reads: replaying what it gets must give the final truth.
    const state = new Map<string, number>();
    const slowLoop = (async () => {
      for await (const e of slow) {
        const line = show(e);
        const [kind, rest] = line.split(" ");
        const [name, val] = rest!.split("@");
        if (kind === "delete") {
          assert.ok(state.has(name!), `delete of unknown ${name}`);
          state.delete(name!);
        } else if (kind === "update") {
          assert.ok(state.has(name!), `update of unknown ${name}`);
          state.set(name!, Number(val));
        } else state.set(name!, Number(val));
      }
    })();
    await until(() => slow.pending === 0 && fast.pending === 0);
    await turn(); // each loop has handled the last item it took
    slow.close();
    fast.close();
    await Promise.all([slowLoop, fastLoop]);
    const want = new Map([...truth].filter(([, x]) => x !== undefined) as [string, number][]);
    assert.deepEqual(new Map([...state].sort()), new Map([...want].sort()));
    assert.ok(fastSeen.length > 1000, "the fast subscriber was served throughout");
  });
});

/** A receiver whose readiness the test sets; records what it took and how often it stalled. */
function receiver(s: Subscription, opts: { ready?: boolean; accept?: (n: number) => boolean } = {}) {
  const r = {
    isReady: opts.ready ?? true,
    took: [] as string[],
    tokens: [] as (string | undefined)[],
    stalls: 0,
    ended: [] as (Error | undefined)[],
  };
  s.attach({
    ready: () => r.isReady,
    take: (item) => {
      r.took.push(item.event ? show(item.event) : `synced ${item.synced}`);
      r.tokens.push(item.token);
      return opts.accept ? opts.accept(r.took.length) : true;
    },
    stalled: () => void r.stalls++,
    ended: (error) => void r.ended.push(error),
  });
  return r;
}

describe("Subscription with a receiver: the synchronous fast path and the drain path", () => {
  test("a ready receiver gets each change inside push(), nothing is queued, and the snapshot goes first at attach", () => {
    const s = new Subscription({ policy: "coalesce", bufferSize: 2 });
    s.preload([create("a"), create("b")], { token: "T0" });
    const r = receiver(s);
    assert.deepEqual(r.took, ["create a@0", "create b@0", "synced snapshot"], "attach hands out the preloaded snapshot and its marker");
    for (let i = 1; i <= 10; i++) {
      assert.equal(s.push({ ...update("a", i), token: `T${i}` }), true);
      // Synchronous: taken before push() returned, and nothing waits.
      assert.equal(r.took.at(-1), `update a@${i}`);
      assert.equal(s.pending, 0);
    }
    assert.equal(r.tokens.at(-1), "T10");
    assert.equal(r.stalls, 0);
    assert.equal(s.stats().delivered, 12);
  });

  test("a receiver that is not ready: changes queue under the policy, it is told once, and drain() delivers the net change in order", () => {
    const s = new Subscription({ policy: "coalesce", bufferSize: 2 });
    const r = receiver(s);
    s.push(create("a"));
    assert.deepEqual(r.took, ["create a@0"]);
    r.isReady = false;
    for (let i = 1; i <= 50; i++) s.push(update("a", i));
    s.push(create("b"));
    s.mark("resync", "R");
    assert.equal(r.stalls, 1, "one stall per backlog, not one per change");
    assert.equal(r.took.length, 1, "nothing is handed out while not ready");
    assert.ok(s.stats().coalesced > 0);
    // Still not ready: drain() hands out nothing and stalls again.
    s.drain();
    assert.equal(r.stalls, 2);
    r.isReady = true;
    s.drain();
    assert.deepEqual(r.took, ["create a@0", "update a@50", "create b@0", "synced resync"]);
    // Back on the fast path.
    s.push(update("b", 1));
    assert.equal(r.took.at(-1), "update b@1");
    assert.equal(s.pending, 0);
  });

  test("a change pushed while a backlog waits goes behind it, even once the receiver is ready again (order is kept)", () => {
    const s = new Subscription({ policy: "drop", bufferSize: 10 });
    const r = receiver(s, { ready: false });
    s.push(create("a"));
    s.push(create("b"));
    // Ready, but its drain signal has not fired yet: c must not overtake a and b.
    r.isReady = true;
    s.push(create("c"));
    assert.deepEqual(r.took, []);
    s.drain();
    assert.deepEqual(r.took, ["create a@0", "create b@0", "create c@0"]);
    assert.equal(s.pending, 0);
  });

  test("take() returning false ends the subscription and tells the receiver; disconnect fails it with a LaggingError", () => {
    const s = new Subscription({ policy: "coalesce", bufferSize: 2 });
    const r = receiver(s, { accept: (n) => n < 2 });
    s.push(create("a"));
    assert.equal(s.closed, false);
    assert.equal(s.push(create("b")), false, "the receiver refused it: the stream is over");
    assert.equal(s.closed, true);
    assert.deepEqual(r.ended, [undefined]);

    const lag = new Subscription({ policy: "disconnect", bufferSize: 2 });
    const l = receiver(lag, { ready: false });
    lag.push(create("a"));
    lag.push(create("b"));
    lag.push(create("c"));
    assert.equal(l.ended.length, 1);
    assert.ok(l.ended[0] instanceof LaggingError);
    assert.deepEqual(l.took, []);
  });
});
