import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { startSandbox } from "../src/sandbox/mod.ts";
import { VirtualClock } from "../src/watch/clock.ts";

describe("sandbox restart() emulates a kube-apiserver restart", () => {
  test("streams end; 429 'storage is (re)initializing' with Retry-After while warming up; then old RVs are 410", async () => {
    const clock = new VirtualClock();
    const { sandbox, url, close } = await startSandbox({ clock });
    try {
      const created = sandbox.create("services", { metadata: { name: "a", namespace: "flyte" }, spec: {} });
      const oldRv = created.metadata.resourceVersion!;
      sandbox.patch("services", "flyte", "a", { spec: { x: 1 } });
      const base = `${url}/apis/serving.knative.dev/v1/namespaces/flyte/services`;
      const open = await fetch(`${base}?watch=1&resourceVersion=${sandbox.resourceVersion}`);
      const reader = open.body!.getReader();
      sandbox.restart({ warmupMs: 300 });
      for (;;) if ((await reader.read()).done) break; // the open stream ended
      const warming = await fetch(`${base}?watch=1&resourceVersion=${oldRv}`);
      assert.equal(warming.status, 429);
      assert.equal(warming.headers.get("retry-after"), "1");
      assert.match((await warming.json()).message, /storage is \(re\)initializing/);
      const list = await fetch(base);
      assert.equal(list.status, 429);
      await list.body?.cancel();
      // The warm-up is exactly warmupMs: 1 ms before its end the sandbox still answers 429.
      clock.advance(299);
      const still = await fetch(base);
      assert.equal(still.status, 429);
      await still.body?.cancel();
      clock.advance(1);
      const after = await fetch(`${base}?watch=1&resourceVersion=${oldRv}`);
      assert.equal(after.status, 200);
      const first = JSON.parse((await after.text()).trim().split("\n")[0]!);
      assert.deepEqual([first.type, first.object.code, first.object.reason], ["ERROR", 410, "Expired"]);
      assert.equal((await fetch(base)).status, 200);
    } finally {
      await close();
    }
  });
});
