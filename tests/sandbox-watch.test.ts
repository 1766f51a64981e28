// Sandbox WATCH: initial events, replay, 410/504 in-stream, streaming lists, bookmarks, timeouts,
// selector transitions, lifecycle. Rule IDs (W*, B*, S*) are the watch protocol's (docs/watch-protocol.md).
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { errorFromStatus } from "../src/kube/status.ts";
import { call, openWatch, until, type WatchLine, withSandbox } from "../src/sandbox/testing.ts";
import { VirtualClock } from "../src/watch/clock.ts";

const rvOf = (e: WatchLine) => Number(e.object.metadata.resourceVersion);
const summary = (events: WatchLine[]) =>
  events.map((e) => `${e.type} ${e.object.metadata.name ?? ""}@${e.object.metadata.resourceVersion}`);

describe("sandbox watch: start semantics (§1.2)", () => {
  test('RV "" on a gate-on server: synthetic ADDEDs not in RV order, then the initial-events-end bookmark, then live events', async () => {
    await withSandbox({}, async ({ sandbox, api }) => {
      for (const n of ["a", "b", "c"]) sandbox.create("services", { metadata: { name: n, namespace: "default" } });
      const w = await openWatch(`${api}/namespaces/default/services?watch=1&allowWatchBookmarks=true`);
      try {
        assert.equal(w.response.status, 200);
        assert.equal(w.response.headers.get("content-type"), "application/json");
        const first = await w.take(4);
        assert.deepEqual(summary(first), ["ADDED c@4", "ADDED b@3", "ADDED a@2", "BOOKMARK @4"]);
        // W4: the burst is deliberately not ascending, so resuming from the last ADDED would be wrong.
        assert.ok(rvOf(first[0]!) > rvOf(first[2]!));
        assert.deepEqual(first[3]!.object, {
          kind: "Service",
          apiVersion: "serving.knative.dev/v1",
          metadata: { annotations: { "k8s.io/initial-events-end": "true" }, resourceVersion: "4" },
        });
        sandbox.patch("services", "default", "b", { spec: { v: 2 } });
        assert.deepEqual(summary(await w.take(1)), ["MODIFIED b@5"]);
      } finally {
        await w.cancel();
      }
    });
  });

  test('RV "0" on a gate-off server (watchList:false): ADDEDs then live, no bookmark', async () => {
    await withSandbox({ watchList: false }, async ({ sandbox, api }) => {
      for (const n of ["a", "b"]) sandbox.create("services", { metadata: { name: n, namespace: "default" } });
      const w = await openWatch(`${api}/namespaces/default/services?watch=true&resourceVersion=0&allowWatchBookmarks=true`);
      try {
        assert.deepEqual(summary(await w.take(2)), ["ADDED b@3", "ADDED a@2"]);
        sandbox.delete("services", "default", "a");
        assert.deepEqual(summary(await w.take(1)), ["DELETED a@4"]);
      } finally {
        await w.cancel();
      }
    });
  });

  test('RV "" without allowWatchBookmarks: no end marker even on a gate-on server', async () => {
    await withSandbox({}, async ({ sandbox, api }) => {
      sandbox.create("services", { metadata: { name: "a", namespace: "default" } });
      const w = await openWatch(`${api}/namespaces/default/services?watch=1`);
      try {
        assert.deepEqual(summary(await w.take(1)), ["ADDED a@2"]);
        sandbox.create("services", { metadata: { name: "b", namespace: "default" } });
        assert.deepEqual(summary(await w.take(1)), ["ADDED b@3"]);
      } finally {
        await w.cancel();
      }
    });
  });

  test("RV=N replays history after N in order (never N itself), with the last state on DELETED, then live", async () => {
    await withSandbox({}, async ({ sandbox, api }) => {
      sandbox.create("services", { metadata: { name: "a", namespace: "default", labels: { v: "1" } } }); // 2
      const from = sandbox.resourceVersion;
      sandbox.create("services", { metadata: { name: "b", namespace: "default" } }); // 3
      sandbox.patch("services", "default", "a", { metadata: { labels: { v: "2" } } }); // 4
      sandbox.delete("services", "default", "a"); // 5
      sandbox.create("services", { metadata: { name: "x", namespace: "elsewhere" } }); // 6
      const w = await openWatch(`${api}/namespaces/default/services?watch=1&resourceVersion=${from}`);
      try {
        const events = await w.take(3);
        assert.deepEqual(summary(events), ["ADDED b@3", "MODIFIED a@4", "DELETED a@5"]);
        assert.deepEqual(events[2]!.object.metadata.labels, { v: "2" });
        sandbox.create("services", { metadata: { name: "c", namespace: "default" } });
        assert.deepEqual(summary(await w.take(1)), ["ADDED c@7"]);
      } finally {
        await w.cancel();
      }
    });
  });

  test("a compacted RV: HTTP 200, one ERROR 410 Expired `too old resource version`, then the stream ends (W7)", async () => {
    await withSandbox({}, async ({ sandbox, api }) => {
      sandbox.create("services", { metadata: { name: "a", namespace: "default" } });
      sandbox.create("services", { metadata: { name: "b", namespace: "default" } });
      sandbox.compact();
      const w = await openWatch(`${api}/namespaces/default/services?watch=1&resourceVersion=2`);
      assert.equal(w.response.status, 200);
      const events = await w.rest();
      assert.equal(events.length, 1);
      assert.equal(events[0]!.type, "ERROR");
      assert.deepEqual(events[0]!.object, {
        kind: "Status",
        apiVersion: "v1",
        metadata: {},
        status: "Failure",
        message: "too old resource version: 2 (3)",
        reason: "Expired",
        code: 410,
      });
      assert.equal(errorFromStatus(events[0]!.object, { code: 500, source: "in-stream" }).isExpired, true);
      // The current RV itself is still a valid start.
      const ok = await openWatch(`${api}/namespaces/default/services?watch=1&resourceVersion=3&timeoutSeconds=1`);
      assert.deepEqual(await ok.rest(), []);
    });
  });

  test("the history window (historyLimit) bounds replay: older RVs get the in-stream 410", async () => {
    await withSandbox({ historyLimit: 3 }, async ({ sandbox, api }) => {
      for (let i = 0; i < 5; i++) sandbox.create("services", { metadata: { name: `s${i}`, namespace: "default" } }); // 2..6
      const old = await openWatch(`${api}/namespaces/default/services?watch=1&resourceVersion=2`);
      const err = await old.rest();
      assert.deepEqual(err.map((e) => [e.type, e.object.code, e.object.message]), [["ERROR", 410, "too old resource version: 2 (3)"]]);
      const w = await openWatch(`${api}/namespaces/default/services?watch=1&resourceVersion=3`);
      try {
        assert.deepEqual(summary(await w.take(3)), ["ADDED s2@4", "ADDED s3@5", "ADDED s4@6"]);
      } finally {
        await w.cancel();
      }
    });
  });

  test("a future RV: waits tooLargeWaitMs, then 200 + ERROR 504 ResourceVersionTooLarge; reached in time it streams", async () => {
    const clock = new VirtualClock();
    await withSandbox({ tooLargeWaitMs: 30_000, clock }, async ({ api }) => {
      const opening = openWatch(`${api}/namespaces/default/services?watch=1&resourceVersion=9`);
      // Parked on one timer of exactly tooLargeWaitMs; the answer comes when it fires.
      assert.equal((await clock.next("too-large-rv")).delay, 30_000);
      clock.advance(29_999);
      assert.equal(clock.pending("too-large-rv").length, 1);
      clock.advance(1);
      const w = await opening;
      assert.equal(w.response.status, 200);
      const events = await w.rest();
      assert.equal(events.length, 1);
      const err = errorFromStatus(events[0]!.object, { code: 500, source: "in-stream" });
      assert.equal(err.code, 504);
      assert.equal(err.reason, "Timeout");
      assert.equal(err.retryAfterSeconds, 1);
      assert.equal(err.isTooLargeResourceVersion, true);
    });
    await withSandbox({ tooLargeWaitMs: 5000, clock }, async ({ sandbox, api }) => {
      const parked = clock.next("too-large-rv");
      const pending = openWatch(`${api}/namespaces/default/services?watch=1&resourceVersion=2`);
      await parked; // the watch waits for RV 2
      sandbox.create("services", { metadata: { name: "a", namespace: "default" } }); // 2
      const w = await pending;
      try {
        sandbox.create("services", { metadata: { name: "b", namespace: "default" } }); // 3
        assert.deepEqual(summary(await w.take(1)), ["ADDED b@3"]);
      } finally {
        await w.cancel();
      }
    });
  });
});

describe("sandbox watch: streaming list and validation (§1.5, S1–S6)", () => {
  test("sendInitialEvents=true: ADDED for every object, the annotated bookmark with the sync RV, then live", async () => {
    await withSandbox({}, async ({ sandbox, api }) => {
      sandbox.create("services", { metadata: { name: "a", namespace: "default" } }); // 2
      sandbox.create("services", { metadata: { name: "b", namespace: "default" } }); // 3
      sandbox.create("revisions", { metadata: { name: "r", namespace: "default" } }); // 4
      for (const rv of ["", "2"]) {
        const w = await openWatch(
          `${api}/namespaces/default/services?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true&resourceVersion=${rv}`,
        );
        try {
          const events = await w.take(3);
          assert.deepEqual(summary(events), ["ADDED b@3", "ADDED a@2", "BOOKMARK @4"], `rv=${rv}`);
          assert.equal(events[2]!.object.metadata.annotations["k8s.io/initial-events-end"], "true");
        } finally {
          await w.cancel();
        }
      }
      // Without allowWatchBookmarks the end marker never comes (validation does not require it).
      const w = await openWatch(`${api}/namespaces/default/services?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan`);
      try {
        assert.deepEqual(summary(await w.take(2)), ["ADDED b@3", "ADDED a@2"]);
        sandbox.create("services", { metadata: { name: "c", namespace: "default" } });
        assert.deepEqual(summary(await w.take(1)), ["ADDED c@5"]);
      } finally {
        await w.cancel();
      }
    });
  });

  test("sendInitialEvents=false with NotOlderThan starts at the latest RV with no initial events", async () => {
    await withSandbox({}, async ({ sandbox, api }) => {
      sandbox.create("services", { metadata: { name: "a", namespace: "default" } });
      const w = await openWatch(`${api}/namespaces/default/services?watch=1&sendInitialEvents=false&resourceVersionMatch=NotOlderThan`);
      try {
        sandbox.create("services", { metadata: { name: "b", namespace: "default" } });
        assert.deepEqual(summary(await w.take(1)), ["ADDED b@3"]);
      } finally {
        await w.cancel();
      }
    });
  });

  test("watch validation: 422 for each rule, and the gate-off message with watchList:false", async () => {
    const expect422 = async (api: string, query: string, causes: [string, string][]) => {
      const r = await call(`${api}/namespaces/default/services?watch=1&${query}`);
      assert.equal(r.status, 422, query);
      assert.equal(r.body.reason, "Invalid");
      assert.deepEqual(r.body.details.causes.map((c: { field: string; message: string }) => [c.field, c.message]), causes, query);
    };
    await withSandbox({}, async ({ api }) => {
      await expect422(api, "sendInitialEvents=true", [
        ["resourceVersionMatch", "Forbidden: sendInitialEvents requires setting resourceVersionMatch to NotOlderThan"],
      ]);
      await expect422(api, "resourceVersion=5&resourceVersionMatch=NotOlderThan", [
        ["resourceVersionMatch", "Forbidden: resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided"],
      ]);
      await expect422(api, "sendInitialEvents=true&resourceVersionMatch=Exact&resourceVersion=5", [
        ["resourceVersionMatch", "Forbidden: sendInitialEvents requires setting resourceVersionMatch to NotOlderThan"],
        ["resourceVersionMatch", 'Unsupported value: "Exact": supported values: "NotOlderThan"'],
      ]);
    });
    await withSandbox({ watchList: false }, async ({ api }) => {
      await expect422(api, "sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true", [
        ["sendInitialEvents", "Forbidden: sendInitialEvents is forbidden for watch unless the WatchList feature gate is enabled"],
      ]);
    });
  });
});

describe("sandbox watch: bookmarks, timeouts, selectors (§1.4, §1.7, B1–B3)", () => {
  test("periodic bookmarks carry only kind/apiVersion/RV and are sent only when the RV moved past what was sent", async () => {
    const clock = new VirtualClock();
    await withSandbox({ bookmarkIntervalMs: 15, clock }, async ({ sandbox, api }) => {
      sandbox.create("services", { metadata: { name: "a", namespace: "default" } }); // 2
      const w = await openWatch(`${api}/namespaces/default/services?watch=1&allowWatchBookmarks=true&resourceVersion=2`);
      try {
        await until(() => clock.pending("bookmark").length === 1, "the periodic bookmark armed");
        assert.equal(clock.pending("bookmark")[0]!.delay, 15);
        // A write to another resource moves the global RV: the services watcher gets a bookmark, not an event.
        sandbox.create("revisions", { metadata: { name: "r1", namespace: "default" } }); // 3
        clock.advance(15);
        const [bm] = await w.take(1);
        assert.deepEqual(bm!.object, { kind: "Service", apiVersion: "serving.knative.dev/v1", metadata: { resourceVersion: "3" } });
        // Five bookmark ticks pass with nothing new: none of them may repeat RV 3.
        for (let i = 0; i < 5; i++) clock.advance(15);
        sandbox.patch("services", "default", "a", { spec: { v: 1 } }); // 4
        sandbox.create("revisions", { metadata: { name: "r2", namespace: "default" } }); // 5
        clock.advance(15);
        // No repeated bookmark for an RV already sent: the next lines are exactly these.
        assert.deepEqual(summary(await w.take(2)), ["MODIFIED a@4", "BOOKMARK @5"]);
      } finally {
        await w.cancel();
      }
      await until(() => sandbox.activeWatches() === 0, "the first watch released");
      // Without allowWatchBookmarks there are none: no bookmark timer, and ticks' worth of time sends nothing.
      const plain = await openWatch(`${api}/namespaces/default/services?watch=1&resourceVersion=5`);
      try {
        await until(() => clock.pending("watch-timeout").length === 1, "the plain watch armed");
        assert.deepEqual(clock.pending("bookmark"), []);
        sandbox.create("revisions", { metadata: { name: "r3", namespace: "default" } }); // 6
        clock.advance(60);
        sandbox.patch("services", "default", "a", { spec: { v: 2 } }); // 7
        assert.deepEqual(summary(await plain.take(1)), ["MODIFIED a@7"]);
      } finally {
        await plain.cancel();
      }
    });
  });

  test("timeoutSeconds ends the stream cleanly (no ERROR), with a bookmark shortly before the deadline", async () => {
    const clock = new VirtualClock();
    await withSandbox({ clock }, async ({ sandbox, api }) => {
      sandbox.create("services", { metadata: { name: "a", namespace: "default" } }); // 2
      sandbox.create("revisions", { metadata: { name: "r", namespace: "default" } }); // 3
      // Nothing to replay after 2, but the global RV is 3: the pre-timeout bookmark reports it.
      const w = await openWatch(`${api}/namespaces/default/services?watch=1&allowWatchBookmarks=true&resourceVersion=2&timeoutSeconds=30`);
      await until(() => clock.pending("watch-timeout").length === 1, "the watch armed");
      // cache_watcher.go: the bookmark 2 s before the deadline.
      assert.equal(clock.pending("watch-timeout")[0]!.delay, 30_000);
      assert.equal(clock.pending("pre-timeout-bookmark")[0]!.delay, 28_000);
      clock.advance(28_000);
      assert.deepEqual(summary(await w.take(1)), ["BOOKMARK @3"]);
      clock.advance(1_999);
      assert.equal(w.ended, false);
      assert.equal(sandbox.activeWatches(), 1);
      clock.advance(1);
      assert.deepEqual(summary(await w.rest()), []);
      assert.equal(w.ended, true);
      await until(() => sandbox.activeWatches() === 0, "watch unregistered");
    });
    // bookmarkIntervalMs 0: no periodic or pre-timeout bookmarks, but the streaming-list end marker stays.
    const quiet = new VirtualClock();
    await withSandbox({ bookmarkIntervalMs: 0, clock: quiet }, async ({ sandbox, api }) => {
      sandbox.create("services", { metadata: { name: "a", namespace: "default" } }); // 2
      sandbox.create("revisions", { metadata: { name: "r", namespace: "default" } }); // 3
      const col = `${api}/namespaces/default/services?watch=1&allowWatchBookmarks=true&timeoutSeconds=1`;
      const replay = await openWatch(`${col}&resourceVersion=2`);
      await until(() => quiet.pending("watch-timeout").length === 1, "the watch armed");
      assert.deepEqual(quiet.pending().map((t) => t.purpose), ["watch-timeout"]);
      quiet.advance(1000);
      assert.deepEqual(summary(await replay.rest()), []);
      await until(() => sandbox.activeWatches() === 0, "the first watch released");
      const initial = await openWatch(col);
      assert.deepEqual(summary(await initial.take(2)), ["ADDED a@2", "BOOKMARK @3"]);
      assert.deepEqual(quiet.pending().map((t) => t.purpose), ["watch-timeout"]);
      quiet.advance(1000);
      assert.deepEqual(summary(await initial.rest()), []);
    });
  });

  test("label-selector transitions: starts matching = ADDED, stops matching = DELETED with the previous state at the new RV", async () => {
    await withSandbox({}, async ({ sandbox, api }) => {
      sandbox.create("services", { metadata: { name: "a", namespace: "default", labels: { app: "other" } } }); // 2
      const w = await openWatch(`${api}/namespaces/default/services?watch=1&resourceVersion=2&labelSelector=app%3Dweb`);
      try {
        sandbox.patch("services", "default", "a", { metadata: { labels: { app: "web" } } }); // 3
        sandbox.patch("services", "default", "a", { spec: { v: 1 } }); // 4
        sandbox.create("services", { metadata: { name: "b", namespace: "default", labels: { app: "db" } } }); // 5 (ignored)
        sandbox.patch("services", "default", "a", { metadata: { labels: { app: "db" } } }); // 6
        sandbox.patch("services", "default", "a", { spec: { v: 2 } }); // 7 (ignored)
        sandbox.patch("services", "default", "b", { metadata: { labels: { app: "web" } } }); // 8
        sandbox.delete("services", "default", "b"); // 9
        const events = await w.take(5);
        assert.deepEqual(summary(events), ["ADDED a@3", "MODIFIED a@4", "DELETED a@6", "ADDED b@8", "DELETED b@9"]);
        // The DELETED of a transition carries the last matching state, stamped with the event RV.
        assert.deepEqual(events[2]!.object.metadata.labels, { app: "web" });
        assert.deepEqual(events[2]!.object.spec, { v: 1 });
        assert.deepEqual(events[4]!.object.metadata.labels, { app: "web" });
      } finally {
        await w.cancel();
      }
    });
  });

  test("namespace scope, cluster-wide watch, field selector and the single-object watch", async () => {
    await withSandbox({}, async ({ sandbox, api }) => {
      const start = sandbox.resourceVersion;
      const ns = await openWatch(`${api}/namespaces/a/services?watch=1&resourceVersion=${start}`);
      const all = await openWatch(`${api}/services?watch=1&resourceVersion=${start}`);
      const field = await openWatch(`${api}/services?watch=1&resourceVersion=${start}&fieldSelector=metadata.name%3Dy`);
      const one = await openWatch(`${api}/namespaces/b/services/y?watch=1&resourceVersion=${start}`);
      try {
        sandbox.create("services", { metadata: { name: "x", namespace: "b" } }); // 2
        sandbox.create("services", { metadata: { name: "y", namespace: "a" } }); // 3
        sandbox.create("services", { metadata: { name: "y", namespace: "b" } }); // 4
        assert.deepEqual(summary(await ns.take(1)), ["ADDED y@3"]);
        assert.deepEqual(summary(await all.take(3)), ["ADDED x@2", "ADDED y@3", "ADDED y@4"]);
        const f = await field.take(2);
        assert.deepEqual(f.map((e) => e.object.metadata.namespace), ["a", "b"]);
        const o = await one.take(1);
        assert.deepEqual(summary(o), ["ADDED y@4"]);
        assert.equal(o[0]!.object.metadata.namespace, "b");
      } finally {
        await Promise.all([ns.cancel(), all.cancel(), field.cancel(), one.cancel()]);
      }
    });
  });
});

describe("sandbox watch: lifecycle and bounded memory", () => {
  test("activeWatches counts open streams; closeWatches ends them cleanly", async () => {
    await withSandbox({}, async ({ sandbox, api }) => {
      const a = await openWatch(`${api}/namespaces/default/services?watch=1&resourceVersion=1`);
      const b = await openWatch(`${api}/services?watch=1&resourceVersion=1`);
      await until(() => sandbox.activeWatches() === 2, "two watches");
      sandbox.closeWatches();
      assert.equal(sandbox.activeWatches(), 0);
      assert.deepEqual(await a.rest(), []);
      assert.deepEqual(await b.rest(), []);
      assert.equal(a.ended && b.ended, true);
    });
  });

  test("a watcher that falls more than historyLimit events behind is ended without an ERROR; its re-watch gets 410", async () => {
    await withSandbox({ historyLimit: 5 }, async ({ sandbox, api }) => {
      sandbox.create("services", { metadata: { name: "a", namespace: "default" } }); // 2
      const w = await openWatch(`${api}/namespaces/default/services?watch=1&resourceVersion=2`);
      // A synchronous burst: the watcher cannot have read anything in between.
      for (let i = 0; i < 20; i++) sandbox.patch("services", "default", "a", { spec: { i } });
      const events = await w.rest();
      assert.deepEqual(events, []);
      assert.equal(w.ended, true);
      const again = await openWatch(`${api}/namespaces/default/services?watch=1&resourceVersion=2`);
      const err = await again.rest();
      assert.equal(err[0]!.type, "ERROR");
      assert.equal(err[0]!.object.code, 410);
    });
  });

  test("200 watch start/stop cycles leave no open streams or timers; close() ends open watches", async () => {
    let sandboxRef: { pendingTimers: number; activeWatches(): number } | undefined;
    await withSandbox({ bookmarkIntervalMs: 1000 }, async ({ sandbox, api }) => {
      sandboxRef = sandbox;
      sandbox.create("services", { metadata: { name: "a", namespace: "default" } });
      for (let i = 0; i < 200; i++) {
        const w = await openWatch(`${api}/namespaces/default/services?watch=1&allowWatchBookmarks=true&timeoutSeconds=300`);
        await w.take(2);
        await w.cancel();
      }
      await until(() => sandbox.activeWatches() === 0 && sandbox.pendingTimers === 0, "all watches released");
      const open = await openWatch(`${api}/namespaces/default/services?watch=1&allowWatchBookmarks=true`);
      await open.take(2);
      assert.equal(sandbox.activeWatches(), 1);
      assert.ok(sandbox.pendingTimers > 0);
    });
    // withSandbox closed the server: dispose ended the watch and cleared its timers.
    assert.equal(sandboxRef!.activeWatches(), 0);
    assert.equal(sandboxRef!.pendingTimers, 0);
  });
});
