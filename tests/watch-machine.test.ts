/**
 * The list/watch state machine (`src/watch/machine.ts`) without HTTP: each
 * rule as a sequence of outcomes fed to `step`, with the backoff on a
 * virtual clock and a fixed random source. `step` is pure: the delay it asks
 * for is turned into milliseconds here as the reflector does (delay.ts).
 */
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { KubeApiError } from "../src/kube/status.ts";
import { Backoff } from "../src/watch/backoff.ts";
import { VirtualClock } from "../src/watch/clock.ts";
import {
  initialState,
  type InitialListMode,
  listQuery,
  type MachineContext,
  type Outcome,
  start,
  type State,
  step as machineStep,
  type Step,
  watchQuery,
} from "../src/watch/machine.ts";
import { delayMs } from "../src/watch/delay.ts";
import { ObjectStore } from "../src/watch/store.ts";
import { type KubeObject, objectKey, type ReflectorEvent } from "../src/watch/types.ts";

function obj(name: string, rv: string, uid = `uid-${name}`): KubeObject {
  return { metadata: { name, namespace: "ns", uid, resourceVersion: rv } };
}

function ctx(o: { initialList?: InitialListMode; store?: ObjectStore<KubeObject>; max?: number } = {}) {
  const clock = new VirtualClock(0);
  const c: Driven = {
    store: o.store ?? new ObjectStore<KubeObject>(),
    backoff: new Backoff({ initialMs: 800, factor: 2, maxMs: 8_000, jitter: 0 }, () => 0.5, () => clock.now()),
    random: () => 0.5,
    initialList: o.initialList ?? "auto",
    pageSize: 500,
    maxWatchErrorsBeforeRelist: o.max ?? 3,
  };
  return { c, clock };
}

/** The machine's context plus what the driver turns a step's delay into milliseconds with. */
type Driven = MachineContext<KubeObject> & { backoff: Backoff; random: () => number };
type DrivenStep = Step<KubeObject> & { delayMs: number };

/** `step` as the reflector drives it: the delay a request step asks for, in milliseconds (delay.ts). */
function step(s: State<KubeObject>, o: Outcome<KubeObject>, c: Driven): DrivenStep {
  const r = machineStep(s, o, c);
  return { ...r, delayMs: r.next === "request" ? delayMs(r.delay, r.resetBackoff === true, c.backoff, c.random) : 0 };
}

/** Applies emitted events to the store, as the reflector does when it yields them. */
function apply(store: ObjectStore<KubeObject>, events: ReflectorEvent<KubeObject>[]): string[] {
  return events.map((e) => {
    if (e.type === "synced") {
      store.setResourceVersion(e.resourceVersion);
      store.markSynced(true);
      return `synced ${e.phase}@${e.resourceVersion}${e.cause ? ` (${e.cause})` : ""}`;
    }
    if (e.type === "deleted") store.delete(objectKey(e.object));
    else store.set(e.object);
    return `${e.type}${e.type === "deleted" && e.inferred ? "(inferred)" : ""} ${e.object.metadata.name}@${e.object.metadata.resourceVersion}`;
  });
}

const page = (items: KubeObject[], rv: string, cont?: string): Outcome<KubeObject> => ({ type: "page", items, resourceVersion: rv, continue: cont });
const event = (e: Extract<Outcome<KubeObject>, { type: "event" }>["event"]): Outcome<KubeObject> => ({ type: "event", event: e });
const added = (o: KubeObject) => event({ type: "ADDED", object: o });
const bookmark = (rv: string, end = false) => event({ type: "BOOKMARK", resourceVersion: rv, end });
const apiError = (code: number, reason: string, extra: { retryAfterSeconds?: number } = {}) => new KubeApiError({ code, reason, ...extra });

function kinds(s: DrivenStep): string {
  return `${s.state.kind}/${s.next}/${Math.round(s.delayMs)}`;
}

function watching(s: State<KubeObject>): Extract<State<KubeObject>, { kind: "watching" }> {
  assert.equal(s.kind, "watching");
  return s as Extract<State<KubeObject>, { kind: "watching" }>;
}

describe("state machine: lists", () => {
  test("L1–L4: empty → paging; pages accumulate; the first page's RV; no RV on any page; synced only after the last → watching", () => {
    const { c } = ctx({ initialList: "paginated" });
    let s = start(initialState<KubeObject>("paginated"), c, false);
    assert.equal(s.kind, "paging");
    if (s.kind !== "paging") return;
    assert.deepEqual(listQuery(s), { limit: 500, continue: undefined });
    let r = step(s, page([obj("a", "11"), obj("b", "12")], "20", "tok1"), c);
    assert.equal(kinds(r), "paging/request/0");
    assert.deepEqual(r.emit, []);
    s = r.state;
    assert.ok(s.kind === "paging");
    assert.deepEqual(listQuery(s), { limit: 500, continue: "tok1" });
    r = step(s, page([obj("c", "99")], "21"), c);
    assert.equal(kinds(r), "watching/request/0");
    assert.equal(watching(r.state).resourceVersion, "20", "L3: the first page's RV, not an item's or a later page's");
    assert.deepEqual(apply(c.store as ObjectStore<KubeObject>, r.emit), ["added a@11", "added b@12", "added c@99", "synced initial@20"]);
    assert.deepEqual(watchQuery(watching(r.state)), { resourceVersion: "20" });
    assert.deepEqual(r.notes, [{ kind: "synced", streaming: false, phase: "initial", cause: undefined, objects: 3 }]);
  });

  test("L5: a 410 on a continuation discards the pages and does one unpaginated list at once; a 410 on a first page backs off", () => {
    const { c } = ctx({ initialList: "paginated" });
    const s0 = start(initialState<KubeObject>("paginated"), c, false);
    const r1 = step(s0, page([obj("a", "11")], "20", "tok1"), c);
    const r2 = step(r1.state, { type: "list-failed", error: apiError(410, "Expired") }, c);
    assert.equal(kinds(r2), "paging/request/0");
    assert.ok(r2.state.kind === "paging");
    assert.deepEqual(listQuery(r2.state), { limit: undefined, continue: undefined }, "never the offered token; no limit");
    assert.equal(r2.state.items.size, 0);
    assert.deepEqual(r2.notes, [{ kind: "continue-expired" }]);
    const r3 = step(r2.state, { type: "list-failed", error: apiError(410, "Expired") }, c);
    assert.equal(kinds(r3), "paging/request/800", "a 410 without a continue token is a failure (backoff)");
    assert.ok(r3.state.kind === "paging");
    assert.equal(listQuery(r3.state).limit, 500, "then paginated again");
  });

  test("L7: a 504 TooLarge on a list is retried after the server's delay (plus ≤10 % jitter)", () => {
    const { c } = ctx({ initialList: "paginated" });
    const s0 = start(initialState<KubeObject>("paginated"), c, false);
    const r = step(s0, { type: "list-failed", error: apiError(504, "Timeout", { retryAfterSeconds: 1 }) }, c);
    assert.ok(r.delayMs >= 1000 && r.delayMs < 1100, `delay ${r.delayMs}`);
  });
});

describe("state machine: streaming list", () => {
  test("S1 S2 B3: buffered until the annotated bookmark; a bookmark without it moves nothing; the marker's RV is the resume point; the stream goes on", () => {
    const { c } = ctx();
    const first = start(initialState<KubeObject>("auto"), c, false);
    assert.ok(first.kind === "initialWatch");
    assert.deepEqual(watchQuery(first), { sendInitialEvents: true, resourceVersionMatch: "NotOlderThan", resourceVersion: "" });
    let s: State<KubeObject> = first;
    for (const o of [added(obj("a", "8467")), bookmark("9000"), added(obj("b", "5726")), event({ type: "DELETED", object: obj("b", "5727") })]) {
      const r: DrivenStep = step(s, o, c);
      assert.equal(kinds(r), "initialWatch/read/0");
      assert.deepEqual(r.emit, []);
      s = r.state;
    }
    const end = step(s, bookmark("9001", true), c);
    assert.equal(kinds(end), "watching/read/0", "the same connection continues as a watch");
    assert.equal(watching(end.state).resourceVersion, "9001");
    assert.deepEqual(apply(c.store as ObjectStore<KubeObject>, end.emit), ["added a@8467", "synced initial@9001"]);
    assert.deepEqual(watchQuery(watching(end.state)), { resourceVersion: "9001" }, "S4: no sendInitialEvents on resume");
  });

  test("S3 W4: a cut, a clean close or a 410 before the marker → a fresh streaming list from RV \"\", after a backoff; the partial buffer is gone", () => {
    for (const o of [
      { type: "failed", cause: "network", error: new Error("cut"), connected: true },
      { type: "ended", events: 2, ms: 5000 },
      event({ type: "ERROR", error: apiError(410, "Expired") }),
    ] as Outcome<KubeObject>[]) {
      const { c } = ctx();
      const s0 = start(initialState<KubeObject>("auto"), c, false);
      const s1 = step(s0, added(obj("a", "8467")), c).state;
      const s2 = step(s1, bookmark("9000"), c).state;
      const r = step(s2, o, c);
      assert.equal(kinds(r), "initialWatch/request/800", o.type);
      assert.ok(r.state.kind === "initialWatch");
      assert.equal(r.state.buffer.size, 0);
      assert.deepEqual(watchQuery(r.state).resourceVersion, "");
      assert.equal(r.notes[0]?.kind, "failure");
    }
  });

  test("S5: a 422 falls back to pages at once (auto); with initialList streaming it is a failure; no end marker in time falls back too", () => {
    const a = ctx();
    const r1 = step(start(initialState<KubeObject>("auto"), a.c, false), { type: "http-error", error: apiError(422, "Invalid") }, a.c);
    assert.equal(kinds(r1), "paging/request/0");
    assert.equal(r1.notes[0]?.kind, "fallback");
    const watchAfter = step(r1.state, page([], "3"), a.c);
    assert.equal(watching(watchAfter.state).streaming, false, "the fallback sticks: relists page too");
    const s = ctx({ initialList: "streaming" });
    const r2 = step(start(initialState<KubeObject>("streaming"), s.c, false), { type: "http-error", error: apiError(422, "Invalid") }, s.c);
    assert.equal(kinds(r2), "initialWatch/request/800");
    const d = ctx();
    const r3 = step(start(initialState<KubeObject>("auto"), d.c, false), { type: "failed", cause: "idle", error: new Error("deadline"), connected: true, deadline: true }, d.c);
    assert.equal(kinds(r3), "paging/request/0");
  });

  test("S6: a 504 TooLarge in-stream is retried after retryAfterSeconds, from RV \"\"", () => {
    const { c } = ctx();
    const r = step(start(initialState<KubeObject>("auto"), c, false), event({ type: "ERROR", error: apiError(504, "Timeout", { retryAfterSeconds: 1 }) }), c);
    assert.equal(r.state.kind, "initialWatch");
    assert.ok(r.delayMs >= 1000 && r.delayMs < 1100);
  });
});

describe("state machine: watching", () => {
  function synced(store = new ObjectStore<KubeObject>(), items: KubeObject[] = [obj("a", "1")], rv = "5", o: { max?: number } = {}) {
    const x = ctx({ initialList: "paginated", store, ...o });
    const r = step(start(initialState<KubeObject>("paginated"), x.c, false), page(items, rv), x.c);
    apply(store, r.emit);
    return { ...x, store, state: r.state };
  }

  test("W4 W5 R2: events move the RV and emit only true changes; a bookmark only moves the RV", () => {
    const { c, store, state } = synced();
    const seen: string[] = [];
    let s = state;
    for (const o of [
      event({ type: "MODIFIED", object: obj("a", "6") }),
      event({ type: "MODIFIED", object: obj("a", "6") }), // duplicate
      event({ type: "DELETED", object: obj("never", "7") }), // unknown key
      bookmark("8"),
      added(obj("a", "9", "uid-new")), // same name, new uid
    ]) {
      const r = step(s, o, c);
      assert.equal(r.next, "read");
      seen.push(`${watching(r.state).resourceVersion}: ${apply(store, r.emit).join(", ")}`);
      s = r.state;
    }
    assert.deepEqual(seen, ["6: modified a@6", "6: ", "7: ", "8: ", "9: deleted(inferred) a@6, added a@9"]);
  });

  test("W6 W11: a clean close after ≥ 1 s re-watches at once from the last RV and resets the backoff; an empty one under 1 s backs off", () => {
    const { c, state } = synced();
    const short = step(state, { type: "ended", events: 0, ms: 999 }, c);
    assert.equal(kinds(short), "watching/request/800");
    assert.deepEqual(short.notes.map((n) => n.kind), ["reconnect", "failure"]);
    assert.equal(kinds(step(short.state, { type: "ended", events: 0, ms: 999 }, c)), "watching/request/1600");
    const ok = step(short.state, { type: "ended", events: 0, ms: 1000 }, c);
    assert.equal(kinds(ok), "watching/request/0");
    assert.equal(watching(ok.state).resourceVersion, "5");
    assert.equal(kinds(step(ok.state, { type: "ended", events: 0, ms: 10 }, c)), "watching/request/800", "backoff starts over");
  });

  for (const [name, o] of [
    ["W7 in-stream ERROR 410 Expired", event({ type: "ERROR", error: apiError(410, "Expired") })],
    ["W7 legacy reason Gone", event({ type: "ERROR", error: apiError(500, "Gone") })],
    ["W8 HTTP 410", { type: "http-error", error: apiError(410, "Expired") }],
  ] as const) {
    test(`${name}: relist at once (resync, cause expired); the stale RV is never asked for again`, () => {
      const { c, state } = synced();
      const r = step(state, o as Outcome<KubeObject>, c);
      assert.equal(kinds(r), "paging/request/0");
      assert.ok(r.state.kind === "paging");
      assert.equal(r.state.phase, "resync");
      assert.equal(r.state.cause, "expired");
      assert.deepEqual(listQuery(r.state), { limit: 500, continue: undefined });
      assert.deepEqual(r.notes.map((n) => n.kind), ["reconnect", "expired"]);
    });
  }

  test("W9 W10: non-410 errors re-watch the same RV with a growing backoff (Retry-After wins); the third in a row relists", () => {
    const { c, clock, state } = synced();
    const r1 = step(state, event({ type: "ERROR", error: apiError(500, "InternalError") }), c);
    assert.equal(kinds(r1), "watching/request/800");
    assert.equal(watching(r1.state).errors, 1);
    clock.advance(r1.delayMs);
    const r2 = step(r1.state, { type: "http-error", error: apiError(429, "TooManyRequests", { retryAfterSeconds: 3 }) }, c);
    assert.ok(r2.delayMs >= 3000 && r2.delayMs < 3300, `Retry-After: ${r2.delayMs}`);
    assert.equal(watching(r2.state).resourceVersion, "5");
    clock.advance(r2.delayMs);
    const r3 = step(r2.state, event({ type: "ERROR", error: apiError(500, "InternalError") }), c);
    assert.equal(kinds(r3), "paging/request/3200", "the backoff kept growing under the Retry-After");
    assert.ok(r3.state.kind === "paging");
    assert.equal(r3.state.cause, "watch-errors");
    assert.deepEqual(r3.notes.map((n) => n.kind), ["reconnect", "relist-after-errors", "failure"]);
  });

  test("W12: silence after the server answered resumes at once; silence before an answer (or a cut) backs off; errors are not reset by either", () => {
    const { c, state } = synced();
    const e1 = step(state, event({ type: "ERROR", error: apiError(500, "InternalError") }), c).state;
    const idle = step(e1, { type: "failed", cause: "idle", error: new Error("no data"), connected: true }, c);
    assert.equal(kinds(idle), "watching/request/0");
    assert.equal(watching(idle.state).errors, 1);
    assert.deepEqual(idle.notes.map((n) => n.kind), ["reconnect", "idle-reconnect"]);
    assert.equal(kinds(step(idle.state, { type: "failed", cause: "idle", error: new Error("no data"), connected: false }, c)), "watching/request/1600");
    assert.equal(kinds(step(idle.state, { type: "failed", cause: "network", error: new Error("reset"), connected: true }, c)), "watching/request/3200");
  });

  test("the backoff starts over after 2 minutes without a failure (virtual clock)", () => {
    const { c, clock, state } = synced();
    const cut = (s: State<KubeObject>) => step(s, { type: "failed", cause: "network", error: new Error("reset"), connected: true }, c);
    const a = cut(state);
    const b = cut(a.state);
    assert.deepEqual([a.delayMs, b.delayMs], [800, 1600]);
    clock.advance(120_001);
    assert.equal(cut(b.state).delayMs, 800);
  });

  test("R1 R2 R3: a relist emits only the differences, inferred deletes first, then a resync marker with its cause", () => {
    const store = new ObjectStore<KubeObject>();
    const { c, state } = synced(store, [obj("same", "1"), obj("changed", "2"), obj("gone", "3"), obj("reborn", "4", "u1")], "10");
    const relist = step(state, { type: "http-error", error: apiError(410, "Expired") }, c);
    const r = step(relist.state, page([obj("same", "1"), obj("changed", "20"), obj("reborn", "21", "u2"), obj("new", "22")], "30"), c);
    assert.deepEqual(apply(store, r.emit), [
      "deleted(inferred) gone@3",
      "modified changed@20",
      "deleted(inferred) reborn@4",
      "added reborn@21",
      "added new@22",
      "synced resync@30 (expired)",
    ]);
  });
});

describe("state machine: runs", () => {
  test("start: a watch resumes from its RV (errors cleared); a sync cut short restarts as a resync with cause restart once a snapshot exists", () => {
    const store = new ObjectStore<KubeObject>();
    const { c } = ctx({ store });
    const w: State<KubeObject> = { kind: "watching", streaming: true, resourceVersion: "42", errors: 2 };
    assert.deepEqual(start(w, c, true), { ...w, errors: 0 });
    const mid = step(start(initialState<KubeObject>("auto"), c, false), added(obj("a", "1")), c).state;
    const fresh = start(mid, c, false);
    assert.ok(fresh.kind === "initialWatch");
    assert.equal(fresh.buffer.size, 0);
    assert.equal(fresh.phase, "initial");
    store.markSynced(true);
    const again = start(mid, c, true);
    assert.ok(again.kind === "initialWatch");
    assert.equal(again.phase, "resync");
    assert.equal(again.cause, "restart");
  });
});

describe("step is pure", () => {
  test("the same state and outcome give the same step; the delay is data (backoff or the server's Retry-After), never a drawn number", () => {
    const store = new ObjectStore<KubeObject>();
    const c: MachineContext<KubeObject> = { store, initialList: "auto", pageSize: 500, maxWatchErrorsBeforeRelist: 3 };
    const s: State<KubeObject> = { kind: "watching", streaming: false, resourceVersion: "10", errors: 0 };
    const cut: Outcome<KubeObject> = { type: "failed", cause: "network", error: new Error("reset"), connected: true };
    const a = machineStep(s, cut, c);
    const b = machineStep(s, cut, c);
    assert.deepEqual(a, b);
    assert.deepEqual(a.delay, { kind: "backoff" });
    const busy: Outcome<KubeObject> = { type: "http-error", error: apiError(429, "TooManyRequests", { retryAfterSeconds: 3 }) };
    assert.deepEqual(machineStep(s, busy, c).delay, { kind: "retry-after", ms: 3000 });
    const ended = machineStep(s, { type: "ended", events: 5, ms: 60_000 }, c);
    assert.deepEqual([ended.delay, ended.resetBackoff], [{ kind: "none" }, true]);
    assert.deepEqual(s, { kind: "watching", streaming: false, resourceVersion: "10", errors: 0 }, "the given state is unchanged");
  });

  test("delay.ts: every failure advances the backoff, a Retry-After included; a reset starts it over; jitter only on Retry-After", () => {
    const clock = new VirtualClock(0);
    const backoff = new Backoff({ initialMs: 800, factor: 2, maxMs: 8_000, jitter: 0 }, () => 0.5, () => clock.now());
    assert.equal(delayMs({ kind: "backoff" }, false, backoff, () => 0.5), 800);
    assert.equal(delayMs({ kind: "retry-after", ms: 3000 }, false, backoff, () => 0.5), 3150);
    assert.equal(delayMs({ kind: "backoff" }, false, backoff, () => 0.5), 3200);
    assert.equal(delayMs({ kind: "none" }, true, backoff, () => 0.5), 0);
    assert.equal(delayMs({ kind: "backoff" }, false, backoff, () => 0.5), 800);
  });
});
