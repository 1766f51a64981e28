// Sandbox fault injection: status (HTTP and in-stream), cut (incl. mid-line), stall, close,
// garbage and drip, on watches and lists; rule matching, counting and removal.
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { errorFromResponse } from "../src/kube/status.ts";
import type { Sandbox } from "../src/sandbox/mod.ts";
import { call, openWatch, until, type WatchLine, WatchReader, withSandbox } from "../src/sandbox/testing.ts";

const summary = (events: WatchLine[]) =>
  events.map((e) => `${e.type} ${e.object?.metadata?.name ?? ""}@${e.object?.metadata?.resourceVersion ?? ""}`);

function seed(sandbox: Sandbox): void {
  for (const n of ["a", "b", "c"]) {
    sandbox.create("services", {
      metadata: { name: n, namespace: "default", annotations: { note: "héllo wörld ✓ 👋" } },
      spec: { template: { spec: { containers: [{ image: `example/${n}` }] } } },
    });
  }
}

async function readText(res: Response): Promise<{ text: string; reads: number }> {
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  let text = "";
  let reads = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return { text: text + decoder.decode(), reads };
    reads++;
    text += decoder.decode(value, { stream: true });
  }
}

describe("sandbox faults: status", () => {
  test("HTTP status with Retry-After and details; `times` and `used`; then normal answers", async () => {
    await withSandbox({}, async ({ sandbox, api }) => {
      const col = `${api}/namespaces/default/services`;
      const h = sandbox.faults.add({ verb: "list", times: 2, action: { type: "status", code: 429, retryAfterSeconds: 3, message: "slow down" } });
      assert.equal(sandbox.faults.pending, 1);
      for (let i = 0; i < 2; i++) {
        const res = await fetch(col);
        assert.equal(res.status, 429);
        assert.equal(res.headers.get("retry-after"), "3");
        const err = await errorFromResponse(res, "list");
        assert.equal(err.reason, "TooManyRequests");
        assert.equal(err.retryAfterSeconds, 3);
        assert.match(err.message, /slow down/);
      }
      assert.equal(h.used, 2);
      assert.equal(sandbox.faults.pending, 0);
      assert.equal((await call(col)).status, 200);
      assert.deepEqual(sandbox.requests.map((r) => r.status), [429, 429, 200]);
    });
  });

  test("a watch status fault: HTTP by default, or 200 + one ERROR event + clean close with inStream", async () => {
    await withSandbox({}, async ({ sandbox, api }) => {
      seed(sandbox);
      const url = `${api}/namespaces/default/services?watch=1&resourceVersion=2`;
      sandbox.faults.add({ verb: "watch", action: { type: "status", code: 410, reason: "Gone", message: "gone" } });
      const http = await call(url);
      assert.equal(http.status, 410);
      assert.deepEqual(http.body, { kind: "Status", apiVersion: "v1", metadata: {}, status: "Failure", message: "gone", reason: "Gone", code: 410 });

      sandbox.faults.add({
        verb: "watch",
        action: { type: "status", code: 500, inStream: true, causes: [{ reason: "InternalError", message: "etcd down" }] },
      });
      const w = await openWatch(url);
      assert.equal(w.response.status, 200);
      const events = await w.rest();
      assert.equal(events.length, 1);
      assert.equal(events[0]!.type, "ERROR");
      assert.equal(events[0]!.object.code, 500);
      assert.equal(events[0]!.object.reason, "InternalError");
      assert.deepEqual(events[0]!.object.details, { causes: [{ reason: "InternalError", message: "etcd down" }] });
      // Used up: the next watch is normal.
      const ok = await openWatch(url);
      try {
        assert.deepEqual(summary(await ok.take(2)), ["ADDED b@3", "ADDED c@4"]);
      } finally {
        await ok.cancel();
      }
    });
  });

  test("rules match by verb and resource, in the order added; remove() and clear() drop them; Infinity repeats", async () => {
    await withSandbox({}, async ({ sandbox, api }) => {
      const svc = `${api}/namespaces/default/services`;
      const rev = `${api}/namespaces/default/revisions`;
      const first = sandbox.faults.add({ resource: "revisions", verb: "list", action: { type: "status", code: 503 } });
      const second = sandbox.faults.add({ resource: "revisions", action: { type: "status", code: 500 } });
      assert.equal((await call(svc)).status, 200);
      assert.equal((await call(`${rev}?watch=1&resourceVersion=1&timeoutSeconds=1`)).status, 500);
      assert.equal((await call(rev)).status, 503);
      assert.equal(first.used, 1);
      assert.equal(second.used, 1);
      const removed = sandbox.faults.add({ action: { type: "status", code: 500 } });
      removed.remove();
      assert.equal((await call(svc)).status, 200);
      assert.equal(removed.used, 0);
      const forever = sandbox.faults.add({ verb: "get", times: Infinity, action: { type: "status", code: 403 } });
      for (let i = 0; i < 3; i++) assert.equal((await call(`${svc}/x`)).status, 403);
      assert.equal(forever.used, 3);
      sandbox.faults.clear();
      assert.equal(sandbox.faults.pending, 0);
      assert.equal((await call(`${svc}/x`)).status, 404);
      // Create/update/patch/delete faults.
      sandbox.faults.add({ verb: "create", action: { type: "status", code: 409, reason: "AlreadyExists" } });
      assert.equal((await call(svc, { method: "POST", body: { metadata: { name: "z" } } })).status, 409);
      assert.equal(sandbox.get("services", "default", "z"), undefined);
    });
  });
});

describe("sandbox faults: broken streams", () => {
  test("cut: n events, then the connection breaks (no clean end)", async () => {
    await withSandbox({}, async ({ sandbox, api }) => {
      seed(sandbox);
      sandbox.faults.add({ verb: "watch", action: { type: "cut", afterEvents: 2 } });
      const w = await openWatch(`${api}/namespaces/default/services?watch=1&allowWatchBookmarks=true`);
      assert.deepEqual(summary(await w.take(2)), ["ADDED c@4", "ADDED b@3"]);
      await assert.rejects(w.next());
      assert.equal(w.ended, false);
      assert.equal(w.partial, "");
      await until(() => sandbox.activeWatches() === 0, "cut watch released");
    });
  });

  test("cut midLine: n events, the first half of the next line, then the break", async () => {
    await withSandbox({}, async ({ sandbox, api }) => {
      seed(sandbox);
      const url = `${api}/namespaces/default/services?watch=1&resourceVersion=2`;
      sandbox.faults.add({ verb: "watch", action: { type: "cut", afterEvents: 1, midLine: true } });
      const w = await openWatch(url);
      assert.deepEqual(summary(await w.take(1)), ["ADDED b@3"]);
      await assert.rejects(w.next());
      const full = await openWatch(url);
      const [, second] = await full.take(2);
      await full.cancel();
      const line = new TextEncoder().encode(`${second!.raw}\n`);
      const half = new TextDecoder().decode(line.subarray(0, Math.floor(line.length / 2)));
      assert.equal(w.partial, half);
      assert.ok(w.partial.length > 10);
      // Nothing pending at the cut (a quiet watch): the break comes at once, with no partial line.
      sandbox.faults.add({ verb: "watch", action: { type: "cut", midLine: true } });
      const quiet = await openWatch(`${api}/namespaces/default/services?watch=1&resourceVersion=4`);
      await assert.rejects(quiet.next());
      assert.equal(quiet.partial, "");
    });
  });

  test("cut on a list: half of the JSON body, then the break", async () => {
    await withSandbox({}, async ({ sandbox, api }) => {
      seed(sandbox);
      const url = `${api}/namespaces/default/services`;
      const full = (await call(url)).text;
      sandbox.faults.add({ verb: "list", action: { type: "cut" } });
      const res = await fetch(url);
      assert.equal(res.status, 200);
      const reader = res.body!.getReader();
      const decoder = new TextDecoder();
      let got = "";
      await assert.rejects(async () => {
        for (;;) {
          const { done, value } = await reader.read();
          if (done) return;
          got += decoder.decode(value, { stream: true });
        }
      });
      // Bun's server gets a leading "\n" so its headers flush (JSON whitespace).
      got = got.replace(/^\n/, "");
      const bytes = new TextEncoder().encode(full);
      assert.equal(got, new TextDecoder().decode(bytes.subarray(0, Math.floor(bytes.length / 2))));
    });
  });

  test("stall: n events, then silence with the connection open; writes do not arrive; the client can abort", async () => {
    await withSandbox({}, async ({ sandbox, api }) => {
      seed(sandbox);
      sandbox.faults.add({ verb: "watch", action: { type: "stall", afterEvents: 1 } });
      const w = await openWatch(`${api}/namespaces/default/services?watch=1&resourceVersion=2`);
      assert.deepEqual(summary(await w.take(1)), ["ADDED b@3"]);
      sandbox.create("services", { metadata: { name: "d", namespace: "default" } });
      await assert.rejects(w.next(150), /no watch data within 150 ms/);
      assert.equal(sandbox.activeWatches(), 1);
      await w.cancel();
      await until(() => sandbox.activeWatches() === 0, "stalled watch released after abort");
    });
  });

  test("stall on a list: headers arrive, the body never does; dispose() ends it", async () => {
    await withSandbox({}, async ({ sandbox, api }) => {
      seed(sandbox);
      sandbox.faults.add({ verb: "list", action: { type: "stall" } });
      const res = await fetch(`${api}/namespaces/default/services`);
      assert.equal(res.status, 200);
      const w = new WatchReader(res);
      await assert.rejects(w.next(150), /no watch data/);
      assert.equal(w.text.trim(), "");
      sandbox.dispose();
      assert.equal(await w.next(), null);
    });
  });

  test("close: n events, then a clean end without ERROR (like timeoutSeconds)", async () => {
    await withSandbox({}, async ({ sandbox, api }) => {
      seed(sandbox);
      sandbox.faults.add({ verb: "watch", action: { type: "close", afterEvents: 2 } });
      const w = await openWatch(`${api}/namespaces/default/services?watch=1&allowWatchBookmarks=true`);
      assert.deepEqual(summary(await w.rest()), ["ADDED c@4", "ADDED b@3"]);
      assert.equal(w.ended, true);
    });
  });

  test("garbage: a malformed line after n events, then normal streaming", async () => {
    await withSandbox({}, async ({ sandbox, api }) => {
      seed(sandbox);
      sandbox.faults.add({ verb: "watch", action: { type: "garbage", afterEvents: 1 } });
      const w = await openWatch(`${api}/namespaces/default/services?watch=1&allowWatchBookmarks=true`);
      try {
        const events = await w.take(5);
        assert.deepEqual(summary(events), ["ADDED c@4", "MALFORMED @", "ADDED b@3", "ADDED a@2", "BOOKMARK @4"]);
        assert.equal(events[1]!.raw, '{"type":"ADDED","object":{');
      } finally {
        await w.cancel();
      }
      sandbox.faults.add({ verb: "watch", action: { type: "garbage", line: "not json at all\n" } });
      const w2 = await openWatch(`${api}/namespaces/default/services?watch=1&resourceVersion=3`);
      try {
        const events = await w2.take(2);
        assert.equal(events[0]!.raw, "not json at all");
        assert.deepEqual(summary(events.slice(1)), ["ADDED c@4"]);
      } finally {
        await w2.cancel();
      }
    });
  });

  test("drip: watch and list bodies arrive in small pieces (lines and UTF-8 split) and reassemble exactly", async () => {
    await withSandbox({}, async ({ sandbox, api }) => {
      seed(sandbox);
      const col = `${api}/namespaces/default/services`;
      const plainList = (await call(col)).text;
      sandbox.faults.add({ verb: "list", action: { type: "drip", chunkBytes: 5, delayMs: 0 } });
      const dripped = await readText(await fetch(col));
      assert.equal(dripped.text.replace(/^\n/, ""), plainList);
      assert.ok(dripped.reads > 1);

      sandbox.faults.add({ verb: "watch", action: { type: "drip", chunkBytes: 3, delayMs: 0 } });
      const w = await openWatch(`${col}?watch=1&resourceVersion=1`);
      try {
        const events = await w.take(3);
        assert.deepEqual(summary(events), ["ADDED a@2", "ADDED b@3", "ADDED c@4"]);
        assert.equal(events[0]!.object.metadata.annotations.note, "héllo wörld ✓ 👋");
      } finally {
        await w.cancel();
      }
    });
  });
});
