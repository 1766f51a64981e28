import { describe, test } from "node:test";
import assert from "node:assert/strict";
import type { App } from "../src/flyte/model.ts";
import { decodeToken, encodeToken, Journal, readToken } from "../src/flyte/journal.ts";
import type { AppChange } from "../src/flyte/journal.ts";
import { Subscription, type SubscriptionItem } from "../src/flyte/subscriptions.ts";

const app = (name: string, v = 0): App => ({ metadata: { id: { org: "flyte", project: "p", domain: "d", name } }, status: { currentReplicas: v } });
const change = (name: string, v = 0): AppChange => ({ key: `flyte/p/d/${name}`, event: { updateEvent: { updatedApp: app(name, v) } } });
const all = () => true;
const names = (cs: AppChange[]) => cs.map((c) => ("updateEvent" in c.event ? `${c.event.updateEvent.updatedApp.metadata!.id!.name}@${c.event.updateEvent.updatedApp.status!.currentReplicas}` : "?"));

/** Applies a KService event at `rv` that changed app `name` (as AppK8sClient does). */
function record(j: Journal, stream: string, rv: string, name: string, v = 0): AppChange {
  j.advance(stream, rv);
  const c = { ...change(name, v), token: j.token() };
  j.append(stream, c);
  return c;
}

describe("resume tokens", () => {
  test("round trip; URL-safe; keys sorted so equal positions give equal tokens", () => {
    const t = encodeToken({ b: "20", a: "100" });
    assert.match(t, /^[A-Za-z0-9_-]+$/);
    assert.equal(t, encodeToken({ a: "100", b: "20" }));
    assert.deepEqual(decodeToken(t), { a: "100", b: "20" });
  });
  const bad: [string, string][] = [
    ["not base64url", "%%%"],
    ["base64 of non-JSON", btoa("hello").replace(/=+$/, "")],
    ["wrong version", btoa(JSON.stringify({ v: 2, p: {} })).replace(/=+$/, "")],
    ["non-numeric resourceVersion", btoa(JSON.stringify({ v: 1, p: { flyte: "abc" } })).replace(/=+$/, "")],
    ["extra key", btoa(JSON.stringify({ v: 1, p: {}, x: 1 })).replace(/=+$/, "")],
    ["too long", "A".repeat(9000)],
  ];
  for (const [what, token] of bad) {
    test(`malformed: ${what} → undefined`, () => assert.equal(decodeToken(token), undefined));
  }
  test("an unnamed cluster's token is byte for byte what it was before names; a named one carries the name", () => {
    assert.equal(encodeToken({ flyte: "12" }), btoa('{"v":1,"p":{"flyte":"12"}}').replace(/=+$/, ""));
    const named = encodeToken({ flyte: "12" }, "east");
    assert.equal(atob(named), '{"v":1,"c":"east","p":{"flyte":"12"}}');
    assert.deepEqual(readToken(named), { position: { flyte: "12" }, cluster: "east" });
    assert.deepEqual(readToken(encodeToken({ flyte: "12" })), { position: { flyte: "12" }, cluster: undefined });
    assert.equal(readToken(btoa(JSON.stringify({ v: 1, c: "", p: {} })).replace(/=+$/, "")), undefined, "an empty name is no name");
  });
});

describe("resume tokens across clusters", () => {
  /** A journal of cluster `name` that has seen flyte@10..12 (the same numbers on every cluster). */
  const journalOf = (name?: string) => {
    const j = new Journal(100, name);
    j.reset("flyte", "10");
    record(j, "flyte", "11", "x");
    record(j, "flyte", "12", "y");
    return j;
  };
  const cases: [string | undefined, string | undefined][] = [["a", "b"], [undefined, "b"], ["a", undefined]];
  for (const [from, to] of cases) {
    test(`a token of cluster ${from ?? "(unnamed)"} at cluster ${to ?? "(unnamed)"}: other-cluster, never covered, never waited for`, () => {
      const token = journalOf(from).token();
      const here = journalOf(to);
      assert.deepEqual(here.since(token, all), { ok: false, reason: "other-cluster" });
      assert.equal(here.covers(token), false);
      assert.equal(here.canCatchUp(token), false);
    });
  }
  test("the same name (or none on both sides) resumes exactly", () => {
    for (const name of ["a", undefined]) {
      const j = journalOf(name);
      const mid = encodeToken({ flyte: "11" }, name);
      const r = j.since(mid, all);
      assert.ok(r.ok);
      assert.deepEqual(names(r.changes), ["y@0"]);
      assert.equal(j.covers(mid), true);
      assert.equal(j.canCatchUp(mid), true);
    }
  });
});

describe("Journal", () => {
  test("since(token) returns exactly the changes after it, in order, filtered", () => {
    const j = new Journal(100);
    j.reset("flyte", "10");
    record(j, "flyte", "11", "a", 1);
    const t = j.token();
    record(j, "flyte", "12", "b", 1);
    j.advance("flyte", "13"); // a KService event that changed no app
    record(j, "flyte", "14", "a", 2);
    const r = j.since(t, all);
    assert.equal(r.ok, true);
    assert.deepEqual(r.ok && names(r.changes), ["b@1", "a@2"]);
    const onlyA = j.since(t, (c) => c.key.endsWith("/a"));
    assert.deepEqual(onlyA.ok && names(onlyA.changes), ["a@2"]);
    // The current token: nothing missed.
    const now = j.since(j.token(), all);
    assert.deepEqual(now.ok && now.changes, []);
  });
  test("a token from before the window is too old; eviction moves the window", () => {
    const j = new Journal(3);
    j.reset("flyte", "1");
    const t0 = j.token();
    for (let i = 2; i <= 4; i++) record(j, "flyte", String(i), "a", i);
    assert.equal(j.since(t0, all).ok, true); // 3 changes after t0, all held
    record(j, "flyte", "5", "a", 5); // evicts the change at 2
    assert.deepEqual(j.since(t0, all), { ok: false, reason: "too-old" });
    const t2 = encodeToken({ flyte: "2" });
    const r = j.since(t2, all);
    assert.deepEqual(r.ok && names(r.changes), ["a@3", "a@4", "a@5"]);
    assert.equal(j.size, 3);
  });
  test("reset (a relist) makes older tokens of that stream unresumable", () => {
    const j = new Journal(100);
    j.reset("flyte", "10");
    record(j, "flyte", "11", "a");
    const before = j.token();
    j.reset("flyte", "50");
    assert.deepEqual(j.since(before, all), { ok: false, reason: "too-old" });
    assert.equal(j.size, 0);
  });
  test("several streams: each resumes from its own resourceVersion", () => {
    const j = new Journal(100);
    j.reset("ns1", "10");
    j.reset("ns2", "20");
    record(j, "ns1", "11", "a", 1);
    record(j, "ns2", "21", "b", 1);
    const t = j.token();
    assert.deepEqual(decodeToken(t), { ns1: "11", ns2: "21" });
    // ns2's next event happens to have a smaller RV than ns1's last (RVs are global, arrival order is per stream).
    record(j, "ns2", "22", "b", 2);
    record(j, "ns1", "30", "a", 2);
    const r = j.since(t, all);
    assert.deepEqual(r.ok && names(r.changes), ["b@2", "a@2"]);
  });
  test("unknown streams, tokens ahead of us and garbage are refused with a reason", () => {
    const j = new Journal(100);
    j.reset("flyte", "10");
    assert.deepEqual(j.since(encodeToken({ other: "10" }), all), { ok: false, reason: "unknown-stream" });
    assert.deepEqual(j.since(encodeToken({ flyte: "10", other: "1" }), all), { ok: false, reason: "unknown-stream" });
    assert.deepEqual(j.since(encodeToken({ flyte: "99" }), all), { ok: false, reason: "ahead" });
    assert.deepEqual(j.since("garbage!", all), { ok: false, reason: "malformed" });
    assert.equal(j.covers(encodeToken({ flyte: "99" })), false);
    j.advance("flyte", "99");
    assert.equal(j.covers(encodeToken({ flyte: "99" })), true);
  });
  test("a token from another replica (same cluster, different journal start) resumes", () => {
    const a = new Journal(100);
    const b = new Journal(100);
    a.reset("flyte", "10");
    b.reset("flyte", "12"); // started later
    for (const j of [a, b]) {
      j.advance("flyte", "11"); // b never sees 11 (before its list), harmless
    }
    record(a, "flyte", "13", "x", 1);
    record(b, "flyte", "13", "x", 1);
    const fromA = a.token();
    record(a, "flyte", "14", "x", 2);
    record(b, "flyte", "14", "x", 2);
    const r = b.since(fromA, all);
    assert.deepEqual(r.ok && names(r.changes), ["x@2"]);
  });
});

async function items(s: Subscription, n: number): Promise<SubscriptionItem[]> {
  const it = s.items();
  const out: SubscriptionItem[] = [];
  while (out.length < n) {
    const r = await it.next();
    if (r.done) break;
    out.push(r.value);
  }
  return out;
}

describe("Subscription: markers and resume tokens", () => {
  test("snapshot, then a synced marker with the snapshot's token, then live events with theirs", async () => {
    const s = new Subscription({ policy: "coalesce", bufferSize: 10 });
    s.preload([change("a"), change("b")], { token: "T0" });
    assert.equal(s.resumeToken("NOW"), undefined); // nothing taken yet
    s.push({ ...change("a", 1), token: "T1" });
    const got = await items(s, 4);
    assert.deepEqual(got.map((i) => i.synced ?? i.token ?? "-"), ["-", "-", "snapshot", "T1"]);
    assert.equal(got[2]!.token, "T0");
    assert.equal(s.resumeToken("NOW"), "NOW"); // nothing pending: the producer's position
    s.push({ ...change("a", 2), token: "T2" });
    assert.equal(s.resumeToken("NOW"), "T1"); // pending: only what was taken
  });
  test("resume replay: no snapshot, a resume marker, tokens from `from` on", async () => {
    const s = new Subscription({ policy: "coalesce", bufferSize: 10 });
    s.preload([{ ...change("a", 1), token: "T1" }], { snapshot: false, from: "T0", token: "T1" });
    assert.equal(s.snapshotSize, 0);
    assert.equal(s.resumeToken("NOW"), "T0");
    const got = await items(s, 2);
    assert.deepEqual(got.map((i) => i.synced ?? i.token), ["T1", "resume"]);
  });
  test("while coalescing, events carry no token and a resync marker waits until the net changes drain", async () => {
    const s = new Subscription({ policy: "coalesce", bufferSize: 2 });
    s.preload([], { token: "T0" });
    await items(s, 1); // the snapshot marker
    for (let i = 1; i <= 5; i++) s.push({ ...change(`a${i % 3}`, i), token: `T${i}` });
    s.mark("resync", "R");
    assert.equal(s.resumeToken("NOW"), "T0");
    const got = await items(s, 4);
    assert.deepEqual(got.map((i) => (i.synced ? `synced:${i.synced}:${i.token}` : `event:${i.token ?? "none"}`)), [
      "event:none",
      "event:none",
      "event:none",
      "synced:resync:R",
    ]);
    assert.equal(s.resumeToken("NOW"), "NOW");
  });
});
