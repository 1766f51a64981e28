/**
 * The watch protocol checklist (docs/watch-protocol.md), one test per rule ID,
 * against a scripted API server over real HTTP on loopback. The scripted
 * server answers each request exactly as the test says, so every rule is
 * checked on the wire: what the client sent, and what it did next.
 */
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { KubeClient } from "../src/kube/client.ts";
import { Reflector, type ReflectorOptions } from "../src/watch/reflector.ts";
import { KNATIVE_SERVICES, type KubeObject } from "../src/watch/types.ts";
import { Backoff } from "../src/watch/backoff.ts";
import { VirtualClock } from "../src/watch/clock.ts";
import { createLogger } from "../src/log.ts";
import { compareResourceVersions } from "../src/watch/resource-version.ts";
import { ev, listPage, obj, type Scripted, startScripted, status, watch } from "./helpers/scripted.ts";
import { start, summary } from "./helpers/run.ts";
import { within } from "./helpers/within.ts";


const SELECTOR = "flyte.org/app-managed=true";

let server: Scripted;
before(async () => {
  server = await startScripted();
});
after(async () => {
  await server.close();
});

let testNo = 0;
function reflector(options: Partial<ReflectorOptions<KubeObject>> = {}) {
  // A namespace per test, so a request from the previous test cannot take this test's answers.
  const namespace = `t${++testNo}`;
  server.reset(`/namespaces/${namespace}/`);
  const client = new KubeClient({ server: server.url });
  return new Reflector({
    client,
    resource: KNATIVE_SERVICES,
    namespace,
    labelSelector: SELECTOR,
    initialList: "paginated",
    idleTimeoutMs: 2_000,
    backoff: { initialMs: 10, maxMs: 80 },
    ...(process.env.DEBUG_REFLECTOR ? { logger: createLogger({ level: "debug" }) } : {}),
    ...options,
  });
}

const watches = () => server.requests.filter((r) => r.query.watch);
const lists = () => server.requests.filter((r) => !r.query.watch);

describe("list rules", () => {
  test("L1 L2 L3 L4: paginated consistent list, continuation without RV, watch from the first page's RV", async () => {
    const r = reflector({ pageSize: 2 });
    server.next(
      listPage([obj("a", "11"), obj("b", "12")], "20", "tok1"),
      listPage([obj("c", "13"), obj("d", "99")], "20", "tok2"),
      listPage([obj("e", "14")], "20", ""),
    );
    const run = start(r);
    try {
      await run.waitFor(() => watches().length === 1, "first watch");
      const [p1, p2, p3] = lists();
      assert.equal(lists().length, 3);
      // L1
      assert.deepEqual(p1!.query, { labelSelector: SELECTOR, limit: "2" });
      // L2: same selector and limit, continue, and no resourceVersion / resourceVersionMatch
      assert.deepEqual(p2!.query, { labelSelector: SELECTOR, limit: "2", continue: "tok1" });
      assert.deepEqual(p3!.query, { labelSelector: SELECTOR, limit: "2", continue: "tok2" });
      // L3: the list RV (20), not the largest item RV (99)
      assert.equal(watches()[0]!.query.resourceVersion, "20");
      // L4: synced only after the last page, with all items
      assert.deepEqual(summary(run.events), [
        "added flyte/a@11", "added flyte/b@12", "added flyte/c@13", "added flyte/d@99", "added flyte/e@14", "synced initial@20",
      ]);
    } finally {
      await run.stop();
    }
  });

  test("L5: an expired continue token discards the partial pages, never reuses the offered token, and does one full list", async () => {
    const r = reflector({ pageSize: 1 });
    server.next(
      listPage([obj("a", "11")], "20", "tok1"),
      status(410, "Expired", { message: "The provided continue parameter is too old", continue: "inconsistent-token" }),
      listPage([obj("a", "11"), obj("b", "30")], "31", ""),
    );
    const run = start(r);
    try {
      await run.waitFor(() => watches().length === 1, "watch after full list");
      const l = lists();
      assert.equal(l.length, 3);
      assert.equal(l[1]!.query.continue, "tok1");
      assert.deepEqual(l[2]!.query, { labelSelector: SELECTOR }, "one full list: no limit, no continue, no RV");
      assert.ok(!server.requests.some((q) => q.query.continue === "inconsistent-token"));
      assert.deepEqual(summary(run.events), ["added flyte/a@11", "added flyte/b@30", "synced initial@31"]);
      assert.equal(watches()[0]!.query.resourceVersion, "31");
    } finally {
      await run.stop();
    }
  });

  test("L6: resourceVersionMatch only with resourceVersion, never with continue, never Exact", async () => {
    const r = reflector({ pageSize: 1, initialList: "auto" });
    server.next(
      status(422, "Invalid", { message: "sendInitialEvents is forbidden for watch unless the WatchList feature gate is enabled" }),
      listPage([obj("a", "11")], "20", "t"),
      listPage([obj("b", "12")], "20", ""),
      watch([ev.error(410, "Expired")], "close"),
      listPage([obj("a", "11")], "40", ""),
    );
    const run = start(r);
    try {
      await run.waitFor(() => watches().length === 3, "watch after relist");
      for (const q of server.requests) {
        if ("resourceVersionMatch" in q.query) {
          assert.ok("resourceVersion" in q.query, "RVM needs RV");
          assert.ok(!("continue" in q.query), "RVM never with continue");
          assert.notEqual(q.query.resourceVersionMatch, "Exact");
        }
        if ("continue" in q.query) assert.ok(!("resourceVersion" in q.query), "continue never with RV");
      }
    } finally {
      await run.stop();
    }
  });

  test("L7: a 504 ResourceVersionTooLarge / Retry-After on list is retried after the indicated delay", async () => {
    const r = reflector({ backoff: { initialMs: 5, maxMs: 5 } });
    server.next(
      status(504, "Timeout", { message: "Too large resource version", retryAfter: 1, causes: [{ reason: "ResourceVersionTooLarge" }] }),
      listPage([obj("a", "1")], "5"),
    );
    const run = start(r);
    try {
      await run.waitFor(() => run.events.some((e) => e.type === "synced"), "sync");
      const [first, second] = lists();
      assert.ok(second!.time - first!.time >= 950, `retried after ${second!.time - first!.time} ms, want ≥ 1 s`);
    } finally {
      await run.stop();
    }
  });
});

describe("watch rules", () => {
  test("W1: watch=1, allowWatchBookmarks=true, timeoutSeconds in [300,600), resourceVersion=last RV", async () => {
    const r = reflector();
    const seen: number[] = [];
    server.next(listPage([], "7"));
    for (let i = 0; i < 5; i++) server.next(watch([ev.added(obj(`x${i}`, String(10 + i)))], "close"));
    const run = start(r);
    try {
      await run.waitFor(() => watches().length >= 6, "six watches");
      const w = watches();
      for (const q of w) {
        assert.equal(q.query.watch, "1");
        assert.equal(q.query.allowWatchBookmarks, "true");
        assert.equal(q.query.labelSelector, SELECTOR);
        const t = Number(q.query.timeoutSeconds);
        seen.push(t);
        assert.ok(Number.isInteger(t) && t >= 300 && t < 600, `timeoutSeconds ${t}`);
      }
      assert.deepEqual(w.map((q) => q.query.resourceVersion), ["7", "10", "11", "12", "13", "14"]);
      assert.ok(new Set(seen).size > 1, "timeoutSeconds is randomised");
    } finally {
      await run.stop();
    }
  });

  test("W2 W3: chunked lines with CRLF and blank lines parse; unknown event types are skipped, not fatal", async () => {
    const r = reflector();
    server.next(
      listPage([], "1"),
      watch([
        `{"type":"ADDED","object":${JSON.stringify(obj("a", "2"))}}\r\n\r\n`,
        `{"type":"SURPRISE","object":{"metadata":{}}}\n`,
        `{"type":"MODIFIED","object":${JSON.stringify(obj("a", "3"))}}`, // no newline yet
        `\n`,
      ]),
    );
    const run = start(r);
    try {
      await run.waitFor(() => run.events.length === 3, "three events");
      assert.deepEqual(summary(run.events), ["synced initial@1", "added flyte/a@2", "modified flyte/a@3"]);
      assert.equal(r.metrics.events.unknown, 1);
      assert.equal(watches().length, 1, "no reconnect for an unknown type");
    } finally {
      await run.stop();
    }
  });

  test("W3: DELETED carries the last state; a modified event carries the previous state", async () => {
    const r = reflector();
    server.next(listPage([obj("a", "1")], "1"), watch([ev.modified(obj("a", "2", { spec: { v: 2 } })), ev.deleted(obj("a", "3", { spec: { v: 3 } }))]));
    const run = start(r);
    try {
      await run.waitFor(() => run.events.length === 4, "events");
      const mod = run.events[2]!;
      assert.equal(mod.type, "modified");
      if (mod.type === "modified") assert.equal(mod.previous.metadata.resourceVersion, "1");
      const del = run.events[3]!;
      assert.equal(del.type, "deleted");
      assert.deepEqual(del.type === "deleted" && del.object.spec, { v: 3 });
      assert.equal(del.type === "deleted" && del.inferred, undefined);
      assert.equal(r.store.size, 0);
    } finally {
      await run.stop();
    }
  });

  test("W5 B1: a bookmark (only metadata.resourceVersion) advances the resume RV and is never emitted", async () => {
    const r = reflector();
    server.next(listPage([obj("a", "1")], "1"), watch([ev.bookmark("50")], "close"));
    const run = start(r);
    try {
      await run.waitFor(() => watches().length === 2, "re-watch");
      assert.equal(watches()[1]!.query.resourceVersion, "50");
      assert.deepEqual(summary(run.events), ["added flyte/a@1", "synced initial@1"]);
      assert.equal(r.store.resourceVersion, "50");
      assert.equal(r.store.size, 1);
    } finally {
      await run.stop();
    }
  });

  test("W6 S4 (failure mode 7): a clean close re-watches at once from the last RV, without relist or sendInitialEvents", async () => {
    const r = reflector({ initialList: "auto" });
    server.next(
      watch([ev.added(obj("a", "3")), ev.added(obj("b", "2")), ev.bookmark("5", true), ev.modified(obj("a", "6"))], "close"),
      watch([ev.modified(obj("b", "8"))], "close"),
    );
    const run = start(r);
    try {
      await run.waitFor(() => watches().length === 3, "third watch");
      const [w1, w2, w3] = watches();
      assert.equal(w1!.query.sendInitialEvents, "true");
      assert.equal(w2!.query.resourceVersion, "6");
      assert.equal(w3!.query.resourceVersion, "8");
      for (const w of [w2!, w3!]) {
        assert.ok(!("sendInitialEvents" in w.query), "S4: not on resume");
        assert.ok(!("resourceVersionMatch" in w.query));
      }
      assert.equal(lists().length, 0, "no relist");
      assert.deepEqual(summary(run.events), [
        "added flyte/a@3", "added flyte/b@2", "synced initial@5", "modified flyte/a@6", "modified flyte/b@8",
      ]);
      assert.ok(w2!.time - w1!.time < 1000);
    } finally {
      await run.stop();
    }
  });

  for (const variant of [
    { name: "A: in-stream ERROR 410 Expired", answer: watch([ev.error(410, "Expired", "too old resource version: 5 (40)")], "close") },
    { name: "B: HTTP 410 with a Status body", answer: status(410, "Expired", { message: "too old resource version" }) },
    { name: "C: legacy in-stream reason Gone", answer: watch([ev.error(410, "Gone")], "close") },
  ]) {
    test(`W7 W8 (failure mode 3) ${variant.name}: exactly one relist, next watch from the new list RV, stale RV never re-sent`, async () => {
      const r = reflector();
      server.next(listPage([obj("a", "3"), obj("b", "4")], "5"), variant.answer, listPage([obj("a", "3"), obj("c", "41")], "42"));
      const run = start(r);
      try {
        // Request 4 is the watch from the relist's RV: list, watch, relist, watch. The queue is then
        // empty, so the server holds that watch open (it hangs), and the reflector, one request at a
        // time, can send nothing more until its 2 s idle timeout: the counts below are final, no grace period.
        await server.waitForRequests(4);
        assert.equal(lists().length, 2, "exactly one relist");
        assert.deepEqual(watches().map((w) => w.query.resourceVersion), ["5", "42"]);
        assert.equal(server.requests.filter((q) => q.query.resourceVersion === "5").length, 1, "the expired RV is never sent again");
        assert.equal(r.metrics.expired, 1);
        assert.deepEqual(summary(run.events), [
          "added flyte/a@3", "added flyte/b@4", "synced initial@5",
          "deleted(inferred) flyte/b@4", "added flyte/c@41", "synced resync@42 (expired)",
        ]);
      } finally {
        await run.stop();
      }
    });
  }

  test("W9: a non-410 ERROR event ends the stream; re-watch from the same RV with backoff; repeated errors relist", async () => {
    const r = reflector({ maxWatchErrorsBeforeRelist: 3 });
    server.next(
      listPage([obj("a", "3")], "5"),
      watch([ev.modified(obj("a", "6")), ev.error(500, "InternalError", "etcd hiccup")]),
      watch([ev.error(500, "InternalError")]),
      watch([ev.error(500, "InternalError")]),
      listPage([obj("a", "6")], "9"),
    );
    const run = start(r);
    try {
      await run.waitFor(() => watches().length === 4, "watch after relist");
      assert.deepEqual(watches().map((w) => w.query.resourceVersion), ["5", "6", "6", "9"]);
      assert.equal(lists().length, 2);
      assert.equal(r.metrics.reconnects["error-event"], 3);
      assert.deepEqual(summary(run.events).slice(-1), ["synced resync@9 (watch-errors)"]);
    } finally {
      await run.stop();
    }
  });

  test("W10: 429 with Retry-After is honoured and keeps the same RV; 5xx backs off; no relist", async () => {
    const r = reflector();
    server.next(
      listPage([], "5"),
      status(429, "TooManyRequests", { retryAfter: 1 }),
      status(503, "ServiceUnavailable"),
    );
    const run = start(r);
    try {
      await run.waitFor(() => watches().length === 3, "three watches");
      const [w1, w2, w3] = watches();
      assert.ok(w2!.time - w1!.time >= 950, `Retry-After honoured: ${w2!.time - w1!.time} ms`);
      assert.ok(w3!.time - w2!.time >= 10, "5xx backs off");
      assert.deepEqual(watches().map((w) => w.query.resourceVersion), ["5", "5", "5"]);
      assert.equal(lists().length, 1);
    } finally {
      await run.stop();
    }
  });

  test("W11: a watch that closes in under 1 s with no events counts as a failure (backoff, not a spin)", async () => {
    const r = reflector({ backoff: { initialMs: 100, maxMs: 1000, jitter: 0 } });
    server.next(listPage([], "5"), watch([], "close"), watch([], "close"), watch([], "close"));
    const run = start(r);
    try {
      await run.waitFor(() => watches().length === 4, "four watches");
      const t = watches().map((w) => w.time);
      assert.ok(t[1]! - t[0]! >= 95 && t[2]! - t[1]! >= 195 && t[3]! - t[2]! >= 395, `gaps ${t[1]! - t[0]!}, ${t[2]! - t[1]!}, ${t[3]! - t[2]!}`);
      assert.equal(r.metrics.failures, 3);
    } finally {
      await run.stop();
    }
  });

  test("W12 (failure mode 1): no bytes within the idle budget aborts the connection and resumes from the last RV, no relist", async () => {
    const r = reflector({ idleTimeoutMs: 300 });
    server.next(listPage([], "5"), watch([ev.added(obj("a", "6"))], "hang"), watch([ev.added(obj("b", "7"))], "hang"));
    const run = start(r);
    try {
      await run.waitFor(() => watches().length === 2, "re-watch after idle");
      const [w1, w2] = watches();
      assert.equal(w2!.query.resourceVersion, "6");
      assert.ok(w2!.time - w1!.time >= 290, "not before the idle budget");
      assert.equal(lists().length, 1);
      assert.equal(r.metrics.reconnects.idle, 1);
      await run.waitFor(() => r.store.size === 2, "event after reconnect");
      await run.waitFor(() => server.open() === 1, "old connection closed");
    } finally {
      await run.stop();
    }
  });
});

describe("bookmark and streaming-list rules", () => {
  test("B2: works when no bookmark ever arrives", async () => {
    const r = reflector();
    server.next(listPage([], "5"), watch([ev.added(obj("a", "6")), ev.modified(obj("a", "7"))], "close"), watch([ev.deleted(obj("a", "8"))]));
    const run = start(r);
    try {
      await run.waitFor(() => run.events.length === 4, "events");
      assert.deepEqual(summary(run.events), ["synced initial@5", "added flyte/a@6", "modified flyte/a@7", "deleted flyte/a@8"]);
    } finally {
      await run.stop();
    }
  });

  test("B3: an initial-events-end bookmark in a resumed watch is just a bookmark", async () => {
    const r = reflector();
    server.next(listPage([obj("a", "1")], "5"), watch([ev.bookmark("9", true)], "close"));
    const run = start(r);
    try {
      await run.waitFor(() => watches().length === 2, "re-watch");
      assert.equal(watches()[1]!.query.resourceVersion, "9");
      assert.deepEqual(summary(run.events), ["added flyte/a@1", "synced initial@5"]);
    } finally {
      await run.stop();
    }
  });

  test("S1 S2: streaming list request shape; events buffered until the end marker, whose RV becomes the resume RV", async () => {
    const r = reflector({ initialList: "streaming" });
    let syncedBeforeMarker = false;
    server.next(watch([ev.added(obj("a", "8467")), ev.added(obj("b", "5726")), ev.bookmark("9000"), ev.bookmark("9001", true)], "close"));
    const run = start(r, () => {
      if (r.store.size === 0) syncedBeforeMarker = true;
    });
    try {
      await run.waitFor(() => watches().length === 2, "resume");
      const [w1, w2] = watches();
      assert.deepEqual(
        { ...w1!.query, timeoutSeconds: "x" },
        { watch: "1", allowWatchBookmarks: "true", timeoutSeconds: "x", labelSelector: SELECTOR, sendInitialEvents: "true", resourceVersionMatch: "NotOlderThan", resourceVersion: "" },
      );
      assert.equal(w2!.query.resourceVersion, "9001");
      assert.deepEqual(summary(run.events), ["added flyte/a@8467", "added flyte/b@5726", "synced initial@9001"]);
      assert.equal(syncedBeforeMarker, false);
      assert.equal(r.metrics.streamingLists, 1);
    } finally {
      await run.stop();
    }
  });

  test("W4 S3 (failure mode 9): a stream that drops inside the unordered initial burst is discarded; no resume from burst RVs", async () => {
    const r = reflector({ initialList: "streaming" });
    server.next(
      watch([ev.added(obj("a", "8467")), ev.added(obj("b", "5726"))], "cut"),
      watch([ev.added(obj("a", "8467")), ev.bookmark("9001", true)]),
    );
    const run = start(r);
    try {
      await run.waitFor(() => run.events.some((e) => e.type === "synced"), "sync");
      const [w1, w2] = watches();
      for (const w of [w1!, w2!]) {
        assert.equal(w.query.sendInitialEvents, "true");
        assert.equal(w.query.resourceVersion, "");
      }
      assert.ok(!server.requests.some((q) => q.query.resourceVersion === "5726" || q.query.resourceVersion === "8467"));
      assert.deepEqual(summary(run.events), ["added flyte/a@8467", "synced initial@9001"], "partial buffer (b) discarded");
    } finally {
      await run.stop();
    }
  });

  test("S2 S3: a BOOKMARK without the end annotation inside a streaming list moves nothing; a cut after it, before the end marker, restarts the sync from RV \"\"", async () => {
    const r = reflector({ initialList: "auto" });
    let rvInsideTheList: string | undefined = "unset";
    server.next(
      // Cut right after the mid-list bookmark: the list is not complete, whatever its RV says.
      watch([ev.added(obj("a", "8467")), ev.bookmark("9000"), ev.added(obj("b", "5726")), ev.bookmark("9100")], "cut"),
      (req, signal) => {
        rvInsideTheList = r.resumeResourceVersion;
        return watch([ev.added(obj("a", "8467")), ev.bookmark("9500"), ev.bookmark("9600", true)])(req, signal);
      },
    );
    const run = start(r);
    try {
      await run.waitFor(() => watches().length === 3, "the watch after the completed sync");
      const [w1, w2, w3] = watches();
      for (const w of [w1!, w2!]) {
        assert.equal(w.query.sendInitialEvents, "true", "the sync is redone as a streaming list");
        assert.equal(w.query.resourceVersion, "", "never resumed from a mid-list bookmark");
      }
      assert.equal(rvInsideTheList, undefined, "no resume point between the cut and the end marker");
      assert.equal(w3!.query.resourceVersion, "9600", "the end marker's RV is the resume point");
      assert.ok(!server.requests.some((q) => ["9000", "9100", "9500"].includes(String(q.query.resourceVersion))));
      assert.equal(lists().length, 0, "a cut is not a rejection: no fallback to pages");
      assert.deepEqual(summary(run.events), ["added flyte/a@8467", "synced initial@9600"], "the partial buffer (b) discarded");
      assert.equal(r.metrics.streamingLists, 1);
    } finally {
      await run.stop();
    }
  });

  test("S5: a 422 from a gate-off server falls back to the paginated list", async () => {
    const r = reflector({ initialList: "auto" });
    server.next(
      status(422, "Invalid", { message: "ListOptions.meta.k8s.io \"\" is invalid: sendInitialEvents: Forbidden" }),
      listPage([obj("a", "1")], "3"),
      watch([], "close"),
    );
    const run = start(r);
    try {
      await run.waitFor(() => watches().length === 3, "watch after fallback");
      assert.equal(lists().length, 1);
      assert.equal(watches()[2]!.query.resourceVersion, "3");
      assert.deepEqual(summary(run.events), ["added flyte/a@1", "synced initial@3"]);
    } finally {
      await run.stop();
    }
  });

  test("S5: a streaming list that never sends its end marker within the deadline falls back to the paginated list", async () => {
    const r = reflector({ initialList: "auto", streamingSyncTimeoutMs: 300 });
    server.next(watch([ev.added(obj("a", "5"))], "hang", {}), listPage([obj("a", "5")], "6"));
    const run = start(r);
    try {
      await run.waitFor(() => run.events.some((e) => e.type === "synced"), "sync via list");
      assert.equal(lists().length, 1);
      assert.deepEqual(summary(run.events), ["added flyte/a@5", "synced initial@6"]);
    } finally {
      await run.stop();
    }
  });

  test("S6: a 504 ResourceVersionTooLarge on the streaming path is retried after retryAfterSeconds", async () => {
    const r = reflector({ initialList: "streaming" });
    server.next(
      watch([ev.error(504, "Timeout", "Too large resource version")], "close"),
      watch([ev.bookmark("3", true)]),
    );
    const run = start(r);
    try {
      await run.waitFor(() => run.events.some((e) => e.type === "synced"), "sync");
      const [w1, w2] = watches();
      assert.ok(w2!.time - w1!.time >= 950, `retried after ${w2!.time - w1!.time} ms`);
      assert.equal(w2!.query.sendInitialEvents, "true");
    } finally {
      await run.stop();
    }
  });
});

describe("relist rules", () => {
  test("R1 R2 R3 (failure modes 7, 8): a relist emits only diffs, inferred deletes, delete+add on uid change, and a resync marker", async () => {
    const r = reflector();
    server.next(
      listPage([obj("same", "1"), obj("changed", "2"), obj("gone", "3"), obj("reborn", "4", { uid: "u1" })], "10"),
      watch([ev.error(410, "Expired")], "close"),
      listPage([obj("same", "1"), obj("changed", "20"), obj("reborn", "21", { uid: "u2" }), obj("new", "22")], "30"),
    );
    const run = start(r);
    try {
      await run.waitFor(() => run.events.filter((e) => e.type === "synced").length === 2, "resync");
      assert.deepEqual(summary(run.events).slice(5), [
        "deleted(inferred) flyte/gone@3",
        "modified flyte/changed@20",
        "deleted(inferred) flyte/reborn@4",
        "added flyte/reborn@21",
        "added flyte/new@22",
        "synced resync@30 (expired)",
      ]);
      assert.deepEqual([...r.store.keys()].sort(), ["flyte/changed", "flyte/new", "flyte/reborn", "flyte/same"]);
      assert.equal(r.store.get("flyte/reborn")!.metadata.uid, "u2");
    } finally {
      await run.stop();
    }
  });

  test("R2: a live ADDED under a known name with a new uid is a delete then an add; a duplicate event is suppressed", async () => {
    const r = reflector();
    server.next(listPage([obj("a", "1", { uid: "u1" })], "2"), watch([ev.modified(obj("a", "1", { uid: "u1" })), ev.added(obj("a", "5", { uid: "u9" }))]));
    const run = start(r);
    try {
      await run.waitFor(() => run.events.length === 4, "events");
      assert.deepEqual(summary(run.events), ["added flyte/a@1", "synced initial@2", "deleted(inferred) flyte/a@1", "added flyte/a@5"]);
    } finally {
      await run.stop();
    }
  });
});

describe("failure modes (scripted)", () => {
  test("5: ECONNRESET mid-stream, 500 on list, 403 on watch — the reflector keeps retrying on its own", async () => {
    const r = reflector();
    server.next(
      status(500, "InternalError"),
      listPage([obj("a", "1")], "2"),
      watch([ev.modified(obj("a", "3"))], "cut"),
      status(403, "Forbidden", { message: "services is forbidden: User cannot watch resource" }),
      watch([ev.modified(obj("a", "4"))]),
    );
    const run = start(r);
    try {
      await run.waitFor(() => r.store.get("flyte/a")?.metadata.resourceVersion === "4", "recovered");
      assert.deepEqual(watches().map((w) => w.query.resourceVersion), ["2", "3", "3"]);
      assert.equal(run.error(), undefined);
      assert.equal(r.metrics.reconnects.network, 1);
      assert.equal(r.metrics.reconnects["http-error"], 1);
    } finally {
      await run.stop();
    }
  });

  test("5: backoff grows to the cap, and 100 watchers do not retry in lockstep", () => {
    const b = new Backoff();
    const d = Array.from({ length: 10 }, () => b.next());
    for (let i = 0; i < d.length; i++) {
      const base = Math.min(800 * 2 ** i, 8_000);
      assert.ok(d[i]! >= base / 2 && d[i]! <= base, `delay ${i} = ${d[i]} not in [${base / 2}, ${base}]`);
    }
    // After the first few failures the retry rate is at most ~1 request/s.
    assert.ok(d.slice(3).every((x) => x >= 1000), `delays ${d.map(Math.round)}`);
    const firsts = Array.from({ length: 100 }, () => new Backoff().next());
    assert.ok(new Set(firsts).size > 95, "jittered");
    assert.ok(Math.max(...firsts) - Math.min(...firsts) > 300, "spread over the jitter window");
    // Reset after 2 minutes of health.
    let now = 0;
    const c = new Backoff({}, () => 0, () => now);
    c.next();
    c.next();
    now += 121_000;
    assert.equal(c.next(), 800);
  });

  test("6: a socket destroyed mid-chunk causes exactly one reconnect and never two parallel watches", async () => {
    // On a virtual clock: the reconnect's backoff fires only when the test moves time, once.
    const clock = new VirtualClock();
    const r = reflector({ clock });
    server.next(listPage([], "1"), watch([ev.added(obj("a", "2")), '{"type":"MODIFIED","obj'], "cut"), watch([ev.modified(obj("a", "3"))]));
    let maxOpen = 0;
    const timer = setInterval(() => (maxOpen = Math.max(maxOpen, server.open())), 1);
    let resumed!: () => void;
    const gotA3 = new Promise<void>((resolve) => (resumed = resolve));
    const run = start(r, (e) => {
      if (e.type === "modified" && e.object.metadata.resourceVersion === "3") resumed();
    });
    try {
      const backoff = await within(clock.next("backoff"), "the backoff after the cut");
      clock.advance(backoff.delay);
      await within(gotA3, "the resumed watch's event");
      // Watch 2 hangs (no more answers queued): another request needs a timer, and no backoff is
      // pending and time stands still, so the counts below are final (no grace period).
      assert.deepEqual(clock.pending("backoff"), [], "no second reconnect scheduled");
      assert.equal(watches().length, 2);
      assert.equal(watches()[1]!.query.resourceVersion, "2");
      assert.ok(maxOpen <= 1, `open watches peaked at ${maxOpen}`);
    } finally {
      clearInterval(timer);
      await run.stop();
    }
  });

  test("decode error: a malformed line is surfaced, counted, and the watch restarts from the last good RV", async () => {
    const lines: string[] = [];
    const r = reflector({ logger: createLogger({ level: "warn", sink: (l) => lines.push(l) }) });
    server.next(listPage([], "1"), watch([ev.added(obj("a", "2")), '{"type":"ADDED","object":{\n', ev.added(obj("never", "99"))]), watch([ev.added(obj("b", "3"))]));
    const run = start(r);
    try {
      await run.waitFor(() => r.store.size === 2, "b");
      assert.equal(watches()[1]!.query.resourceVersion, "2");
      assert.equal(r.metrics.decodeErrors, 1);
      assert.ok(!r.store.has("flyte/never"));
      assert.ok(lines.some((l) => l.includes("malformed-json") && l.includes("line 2")), lines.join("\n"));
    } finally {
      await run.stop();
    }
  });

  test("invalid objects in a list are skipped with a warning, not fatal", async () => {
    const lines: string[] = [];
    const r = reflector({ logger: createLogger({ level: "warn", sink: (l) => lines.push(l) }) });
    server.next(listPage([obj("a", "1"), { metadata: { name: "no-rv" } }, "junk"], "2"));
    const run = start(r);
    try {
      await run.waitFor(() => run.events.some((e) => e.type === "synced"), "sync");
      assert.deepEqual(summary(run.events), ["added flyte/a@1", "synced initial@2"]);
      // The warning the title promises: one per skipped item, each with an excerpt of it.
      const skipped = lines.map((l) => JSON.parse(l) as Record<string, unknown>).filter((w) => w.msg === "skipping invalid object");
      assert.deepEqual(skipped.map((w) => w.excerpt), [JSON.stringify({ metadata: { name: "no-rv" } }), JSON.stringify("junk")], lines.join("\n"));
    } finally {
      await run.stop();
    }
  });

  test("T1: a watch the server never closes keeps delivering", async () => {
    const r = reflector({ idleTimeoutMs: 400 });
    const events = Array.from({ length: 20 }, (_, i) => ev.modified(obj("a", String(10 + i))));
    server.next(listPage([obj("a", "1")], "9"), watch(events, "hang", { gapMs: 50 }));
    const run = start(r);
    try {
      await run.waitFor(() => r.store.get("flyte/a")?.metadata.resourceVersion === "29", "all events", 5_000);
      assert.equal(watches().length, 1, "one connection for the whole time");
    } finally {
      await run.stop();
    }
  });
});

describe("resource versions", () => {
  test("compare by length then lexicographically; non-numeric is not comparable", () => {
    assert.equal(compareResourceVersions("9", "10")! < 0, true);
    assert.equal(compareResourceVersions("123456789012345678901234567890", "123456789012345678901234567889")! > 0, true);
    assert.equal(compareResourceVersions("007", "7"), 0);
    assert.equal(compareResourceVersions("abc", "7"), undefined);
  });
});
