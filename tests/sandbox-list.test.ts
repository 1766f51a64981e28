// Sandbox LIST: selectors, pagination over one snapshot, continue expiry, validation, RV semantics.
// Rule IDs (L1–L7) are the watch protocol's (docs/watch-protocol.md, "Rules → tests").
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { errorFromResponse } from "../src/kube/status.ts";
import type { Sandbox } from "../src/sandbox/mod.ts";
import { call, withSandbox } from "../src/sandbox/testing.ts";
import { VirtualClock } from "../src/watch/clock.ts";

type Item = { metadata: { name: string; resourceVersion: string; labels?: Record<string, string> }; spec?: unknown };
const names = (body: { items: Item[] }) => body.items.map((o) => o.metadata.name);

function seedLabels(sandbox: Sandbox): void {
  const mk = (name: string, labels?: Record<string, string>) =>
    sandbox.create("services", { metadata: { name, namespace: "default", labels } });
  mk("a", { app: "web", tier: "front", n: "1" });
  mk("b", { app: "web", tier: "back", n: "2" });
  mk("c", { app: "db", tier: "back", n: "3" });
  mk("d", { tier: "cache" });
  mk("e");
}

describe("sandbox list: selectors", () => {
  test("every label selector operator, with AND and whitespace", async () => {
    await withSandbox({}, async ({ sandbox, api }) => {
      seedLabels(sandbox);
      const col = `${api}/namespaces/default/services`;
      const cases: [string, string[]][] = [
        ["", ["a", "b", "c", "d", "e"]],
        ["app=web", ["a", "b"]],
        ["app==web", ["a", "b"]],
        ["app!=web", ["c", "d", "e"]],
        ["tier in (front,cache)", ["a", "d"]],
        ["tier in ( front , cache )", ["a", "d"]],
        ["tier notin (back)", ["a", "d", "e"]],
        ["app", ["a", "b", "c"]],
        ["!app", ["d", "e"]],
        ["app=web,tier=back", ["b"]],
        ["app, tier notin (front), !missing", ["b", "c"]],
        ["n>1", ["b", "c"]],
        ["n<2", ["a"]],
        ["app=", []],
      ];
      for (const [sel, want] of cases) {
        const r = await call(`${col}?labelSelector=${encodeURIComponent(sel)}`);
        assert.equal(r.status, 200, sel);
        assert.deepEqual(names(r.body), want, `labelSelector ${JSON.stringify(sel)}`);
      }
    });
  });

  test("invalid label selectors are 400 BadRequest", async () => {
    await withSandbox({}, async ({ api }) => {
      for (const sel of ["app in (", "app in ()", "a b", "=x", "app==a==b", "a,", "-bad", "app=a b", "n>x", "app notin a"]) {
        const r = await call(`${api}/namespaces/default/services?labelSelector=${encodeURIComponent(sel)}`);
        assert.equal(r.status, 400, `labelSelector ${JSON.stringify(sel)}`);
        assert.equal(r.body.kind, "Status");
        assert.equal(r.body.reason, "BadRequest");
      }
    });
  });

  test("field selectors on metadata.name and metadata.namespace; unknown fields are 400", async () => {
    await withSandbox({}, async ({ sandbox, api }) => {
      seedLabels(sandbox);
      sandbox.create("services", { metadata: { name: "a", namespace: "other" } });
      const all = `${api}/services`;
      assert.deepEqual(names((await call(`${all}?fieldSelector=metadata.name%3Da`)).body), ["a", "a"]);
      assert.deepEqual(names((await call(`${all}?fieldSelector=metadata.name%3D%3Da,metadata.namespace%3Dother`)).body), ["a"]);
      assert.deepEqual(names((await call(`${all}?fieldSelector=metadata.namespace!%3Ddefault`)).body), ["a"]);
      const bad = await call(`${all}?fieldSelector=spec.x%3D1`);
      assert.equal(bad.status, 400);
      assert.equal(bad.body.message, '"spec.x" is not a known field selector: only "metadata.name", "metadata.namespace"');
    });
  });
});

describe("sandbox list: pagination (§1.6, L2, L4)", () => {
  test("pages share the snapshot RV while writes happen between pages; last page has no continue", async () => {
    await withSandbox({}, async ({ sandbox, api }) => {
      for (const n of ["a", "b", "c", "d", "e"]) sandbox.create("services", { metadata: { name: n, namespace: "default" }, spec: { v: 1 } });
      const col = `${api}/namespaces/default/services`;
      const p1 = await call(`${col}?limit=2`);
      assert.equal(p1.status, 200);
      assert.deepEqual(names(p1.body), ["a", "b"]);
      assert.equal(p1.body.metadata.resourceVersion, "6");
      assert.equal(p1.body.metadata.remainingItemCount, 3);
      assert.equal(typeof p1.body.metadata.continue, "string");

      // Writes between pages must not show up in this list.
      sandbox.delete("services", "default", "c");
      sandbox.patch("services", "default", "d", { spec: { v: 2 } });
      sandbox.create("services", { metadata: { name: "bb", namespace: "default" } });

      const p2 = await call(`${col}?limit=2&continue=${encodeURIComponent(p1.body.metadata.continue)}`);
      assert.equal(p2.status, 200);
      assert.deepEqual(names(p2.body), ["c", "d"]);
      assert.deepEqual(p2.body.items[1].spec, { v: 1 });
      assert.equal(p2.body.items[1].metadata.resourceVersion, "5");
      assert.equal(p2.body.metadata.resourceVersion, "6");
      assert.equal(p2.body.metadata.remainingItemCount, 1);

      const p3 = await call(`${col}?limit=2&continue=${encodeURIComponent(p2.body.metadata.continue)}`);
      assert.deepEqual(names(p3.body), ["e"]);
      assert.equal(p3.body.metadata.resourceVersion, "6");
      assert.equal(p3.body.metadata.continue, undefined);
      assert.equal(p3.body.metadata.remainingItemCount, undefined);

      // RV "0" is allowed together with continue (a plain continuation).
      const zero = await call(`${col}?limit=2&resourceVersion=0&continue=${encodeURIComponent(p1.body.metadata.continue)}`);
      assert.equal(zero.status, 200);
      assert.deepEqual(names(zero.body), ["c", "d"]);

      const fresh = await call(`${col}?limit=10`);
      assert.deepEqual(names(fresh.body), ["a", "b", "bb", "d", "e"]);
      assert.equal(fresh.body.metadata.resourceVersion, "9");
    });
  });

  test("with a selector, pages fill up to limit, remainingItemCount is absent, and a trailing page may be empty", async () => {
    await withSandbox({}, async ({ sandbox, api }) => {
      seedLabels(sandbox);
      const col = `${api}/namespaces/default/services?labelSelector=tier&limit=2`;
      const p1 = await call(col);
      assert.deepEqual(names(p1.body), ["a", "b"]);
      assert.equal(p1.body.metadata.remainingItemCount, undefined);
      const p2 = await call(`${col}&continue=${encodeURIComponent(p1.body.metadata.continue)}`);
      assert.deepEqual(names(p2.body), ["c", "d"]);
      // "e" has no tier label: the etcd-style scan still reports more keys, so one empty page follows.
      const p3 = await call(`${col}&continue=${encodeURIComponent(p2.body.metadata.continue)}`);
      assert.deepEqual(names(p3.body), []);
      assert.equal(p3.body.metadata.continue, undefined);
    });
  });

  test("continue tokens expire after continueTtlMs: 410 Expired with an inconsistent continuation in metadata.continue", async () => {
    const clock = new VirtualClock(1_000_000);
    await withSandbox({ continueTtlMs: 40, clock }, async ({ sandbox, api }) => {
      for (const n of ["a", "b", "c"]) sandbox.create("services", { metadata: { name: n, namespace: "default" } });
      const col = `${api}/namespaces/default/services`;
      const p1 = await call(`${col}?limit=1`);
      // 39 ms on: the token is still good (the next page, not a 410).
      clock.advance(39);
      const early = await call(`${col}?limit=1&continue=${encodeURIComponent(p1.body.metadata.continue)}`);
      assert.equal(early.status, 200);
      assert.deepEqual(names(early.body), ["b"]);
      // 40 ms on: expired.
      clock.advance(1);
      sandbox.create("services", { metadata: { name: "bb", namespace: "default" } });
      const res = await fetch(`${col}?limit=1&continue=${encodeURIComponent(p1.body.metadata.continue)}`);
      assert.equal(res.status, 410);
      const err = await errorFromResponse(res, "list");
      assert.equal(err.code, 410);
      assert.equal(err.reason, "Expired");
      assert.equal(err.isExpired, true);
      assert.match(err.message, /The provided continue parameter is too old to display a consistent list result/);
      assert.equal(typeof err.continueToken, "string");
      // The inconsistent continuation reads the latest state from the same position.
      const cont = await call(`${col}?limit=10&continue=${encodeURIComponent(err.continueToken!)}`);
      assert.equal(cont.status, 200);
      assert.deepEqual(names(cont.body), ["b", "bb", "c"]);
      assert.equal(cont.body.metadata.resourceVersion, "5");
    });
  });

  test("expireContinueTokens() and compact() make every issued token 410; new lists still work", async () => {
    await withSandbox({}, async ({ sandbox, api }) => {
      for (const n of ["a", "b", "c"]) sandbox.create("services", { metadata: { name: n, namespace: "default" } });
      const col = `${api}/namespaces/default/services`;
      const t1 = (await call(`${col}?limit=1`)).body.metadata.continue;
      const t2 = (await call(`${col}?limit=2`)).body.metadata.continue;
      sandbox.expireContinueTokens();
      for (const t of [t1, t2]) {
        const r = await call(`${col}?limit=1&continue=${encodeURIComponent(t)}`);
        assert.equal(r.status, 410);
        assert.equal(r.body.reason, "Expired");
        assert.equal(typeof r.body.metadata.continue, "string");
      }
      const t3 = (await call(`${col}?limit=1`)).body.metadata.continue;
      assert.equal((await call(`${col}?limit=1&continue=${encodeURIComponent(t3)}`)).status, 200);
      sandbox.compact();
      assert.equal((await call(`${col}?limit=1&continue=${encodeURIComponent(t3)}`)).status, 410);
    });
  });

  test("a continue token whose snapshot fell out of the history window is 410", async () => {
    await withSandbox({ historyLimit: 3 }, async ({ sandbox, api }) => {
      for (const n of ["a", "b", "c"]) sandbox.create("services", { metadata: { name: n, namespace: "default" } });
      const col = `${api}/namespaces/default/services`;
      const t = (await call(`${col}?limit=1`)).body.metadata.continue;
      for (let i = 0; i < 4; i++) sandbox.patch("services", "default", "a", { spec: { i } });
      const r = await call(`${col}?limit=1&continue=${encodeURIComponent(t)}`);
      assert.equal(r.status, 410);
    });
  });
});

describe("sandbox list: validation (L6) and resourceVersion semantics (§1.2, L7)", () => {
  test("400s: continue with an RV, a malformed continue token, a bad limit, a non-numeric RV", async () => {
    await withSandbox({}, async ({ sandbox, api }) => {
      for (const n of ["a", "b"]) sandbox.create("services", { metadata: { name: n, namespace: "default" } });
      const col = `${api}/namespaces/default/services`;
      const t = (await call(`${col}?limit=1`)).body.metadata.continue;
      const withRV = await call(`${col}?limit=1&resourceVersion=3&continue=${encodeURIComponent(t)}`);
      assert.equal(withRV.status, 400);
      assert.equal(withRV.body.reason, "BadRequest");
      assert.equal(withRV.body.message, "specifying resource version is not allowed when using continue");
      const bad = await call(`${col}?limit=1&continue=bm90LWEtdG9rZW4`);
      assert.equal(bad.status, 400);
      assert.match(bad.body.message, /^invalid continue token/);
      assert.equal((await call(`${col}?limit=abc`)).status, 400);
      assert.equal((await call(`${col}?resourceVersion=abc`)).status, 400);
    });
  });

  test("422 Invalid ListOptions for every rule of ValidateListOptions, all causes listed", async () => {
    await withSandbox({}, async ({ api }) => {
      const col = `${api}/namespaces/default/services`;
      const expect422 = async (query: string, causes: [string, string][]) => {
        const r = await call(`${col}?${query}`);
        assert.equal(r.status, 422, query);
        assert.equal(r.body.reason, "Invalid");
        assert.equal(r.body.details.kind, "ListOptions");
        assert.equal(r.body.details.group, "meta.k8s.io");
        assert.deepEqual(r.body.details.causes.map((c: { field: string; message: string }) => [c.field, c.message]), causes, query);
      };
      await expect422("resourceVersionMatch=NotOlderThan", [
        ["resourceVersionMatch", "Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided"],
      ]);
      await expect422("resourceVersion=0&resourceVersionMatch=Exact", [
        ["resourceVersionMatch", 'Forbidden: resourceVersionMatch "exact" is forbidden for resourceVersion "0"'],
      ]);
      await expect422("resourceVersion=5&resourceVersionMatch=Exact&continue=abc", [
        ["resourceVersionMatch", "Forbidden: resourceVersionMatch is forbidden when continue is provided"],
      ]);
      await expect422("resourceVersion=5&resourceVersionMatch=Newest", [
        ["resourceVersionMatch", 'Unsupported value: "Newest": supported values: "Exact", "NotOlderThan", ""'],
      ]);
      await expect422("sendInitialEvents=true", [["sendInitialEvents", "Forbidden: sendInitialEvents is forbidden for list"]]);
      const r = await call(`${col}?sendInitialEvents=false`);
      assert.equal(r.body.message, 'ListOptions.meta.k8s.io "" is invalid: sendInitialEvents: Forbidden: sendInitialEvents is forbidden for list');
    });
  });

  test("RV unset/0/N/NotOlderThan read the latest state; Exact and limit+N rebuild the state at N", async () => {
    await withSandbox({}, async ({ sandbox, api }) => {
      const col = `${api}/namespaces/default/services`;
      sandbox.create("services", { metadata: { name: "a", namespace: "default" }, spec: { v: 1 } }); // 2
      sandbox.create("services", { metadata: { name: "b", namespace: "default" } }); // 3
      const at = sandbox.resourceVersion; // "3"
      sandbox.patch("services", "default", "a", { spec: { v: 2 } }); // 4
      sandbox.delete("services", "default", "b"); // 5
      sandbox.create("services", { metadata: { name: "c", namespace: "default" } }); // 6
      for (const q of ["", "resourceVersion=0", `resourceVersion=${at}`, `resourceVersion=${at}&resourceVersionMatch=NotOlderThan`, "resourceVersion=0&resourceVersionMatch=NotOlderThan"]) {
        const r = await call(`${col}?${q}`);
        assert.equal(r.status, 200, q);
        assert.deepEqual(names(r.body), ["a", "c"], q);
        assert.equal(r.body.metadata.resourceVersion, "6", q);
      }
      for (const q of [`resourceVersion=${at}&resourceVersionMatch=Exact`, `resourceVersion=${at}&limit=10`]) {
        const r = await call(`${col}?${q}`);
        assert.equal(r.status, 200, q);
        assert.deepEqual(names(r.body), ["a", "b"], q);
        assert.deepEqual(r.body.items[0].spec, { v: 1 }, q);
        assert.equal(r.body.items[0].metadata.resourceVersion, "2", q);
        assert.equal(r.body.metadata.resourceVersion, "3", q);
      }
      // Exact paginates within the historical snapshot too.
      const p1 = await call(`${col}?resourceVersion=${at}&resourceVersionMatch=Exact&limit=1`);
      assert.deepEqual(names(p1.body), ["a"]);
      const p2 = await call(`${col}?limit=1&continue=${encodeURIComponent(p1.body.metadata.continue)}`);
      assert.deepEqual(names(p2.body), ["b"]);
      assert.equal(p2.body.metadata.resourceVersion, "3");

      sandbox.compact();
      const gone = await call(`${col}?resourceVersion=${at}&resourceVersionMatch=Exact`);
      assert.equal(gone.status, 410);
      assert.deepEqual(gone.body, {
        kind: "Status",
        apiVersion: "v1",
        metadata: {},
        status: "Failure",
        message: "The resourceVersion for the provided list is too old.",
        reason: "Expired",
        code: 410,
      });
      // The current RV itself is still readable exactly.
      assert.equal((await call(`${col}?resourceVersion=6&resourceVersionMatch=Exact`)).status, 200);
      // NotOlderThan an old RV is still fine: the latest state is newer.
      assert.equal((await call(`${col}?resourceVersion=${at}`)).status, 200);
    });
  });

  test("Exact beyond the history window is 410 (historyLimit)", async () => {
    await withSandbox({ historyLimit: 2 }, async ({ sandbox, api }) => {
      sandbox.create("services", { metadata: { name: "a", namespace: "default" } }); // 2
      sandbox.create("services", { metadata: { name: "b", namespace: "default" } }); // 3
      sandbox.create("services", { metadata: { name: "c", namespace: "default" } }); // 4
      const col = `${api}/namespaces/default/services`;
      assert.equal((await call(`${col}?resourceVersion=2&resourceVersionMatch=Exact`)).status, 200);
      assert.equal((await call(`${col}?resourceVersion=1&resourceVersionMatch=Exact`)).status, 410);
    });
  });

  test("a future RV waits tooLargeWaitMs, then 504 Timeout with cause ResourceVersionTooLarge and Retry-After: 1", async () => {
    const clock = new VirtualClock();
    await withSandbox({ tooLargeWaitMs: 30_000, clock }, async ({ api }) => {
      const pending = fetch(`${api}/namespaces/default/services?resourceVersion=50`);
      // The request is parked on a timer of exactly tooLargeWaitMs; nothing answers before it fires.
      const parked = await clock.next("too-large-rv");
      assert.equal(parked.delay, 30_000);
      clock.advance(29_999);
      assert.equal(clock.pending("too-large-rv").length, 1);
      clock.advance(1);
      const res = await pending;
      assert.equal(res.status, 504);
      assert.equal(res.headers.get("retry-after"), "1");
      const err = await errorFromResponse(res, "list");
      assert.equal(err.reason, "Timeout");
      assert.equal(err.retryAfterSeconds, 1);
      assert.equal(err.isTooLargeResourceVersion, true);
      assert.deepEqual(err.causes, [{ reason: "ResourceVersionTooLarge", message: "Too large resource version" }]);
      assert.match(err.message, /Too large resource version: 50, current: 1/);
    });
  });

  test("a future RV that is reached while waiting is served", async () => {
    const clock = new VirtualClock();
    await withSandbox({ tooLargeWaitMs: 5000, clock }, async ({ sandbox, api }) => {
      const parked = clock.next("too-large-rv");
      const pending = call(`${api}/namespaces/default/services?resourceVersion=2&resourceVersionMatch=NotOlderThan`);
      // The request is parked (its timer is set); a write brings the RV to 2 and releases it.
      await parked;
      sandbox.create("services", { metadata: { name: "late", namespace: "default" } });
      const r = await pending;
      assert.equal(r.status, 200);
      assert.deepEqual(names(r.body), ["late"]);
      assert.equal(r.body.metadata.resourceVersion, "2");
    });
  });
});
