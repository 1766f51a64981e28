// Sandbox demo cluster (seedDemo, startDemoActivity) and CLI argument parsing.
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { parseCliArgs } from "../src/sandbox/cli.ts";
import { seedDemo, startDemoActivity } from "../src/sandbox/mod.ts";
import { call, openWatch, withSandbox } from "../src/sandbox/testing.ts";
import { VirtualClock } from "../src/watch/clock.ts";

describe("sandbox demo", () => {
  test("seedDemo creates Flyte-managed KServices with labels, annotations, Knative status and a Revision each", async () => {
    await withSandbox({}, async ({ sandbox, api }) => {
      const created = seedDemo(sandbox, { namespace: "flyte", count: 5 });
      assert.equal(created.length, 5);
      const list = await call(`${api}/namespaces/flyte/services?labelSelector=${encodeURIComponent("flyte.org/app-managed=true")}`);
      assert.equal(list.body.items.length, 5);
      const first = sandbox.get("services", "flyte", "streamlit-hello-flytesnacks-development")!;
      assert.deepEqual(first.metadata.labels, {
        "flyte.org/app-managed": "true",
        "flyte.org/app-name": "streamlit-hello",
        "flyte.org/domain": "development",
        "flyte.org/project": "flytesnacks",
      });
      assert.deepEqual(first.metadata.annotations, {
        "flyte.org/app-id": "flytesnacks/development/streamlit-hello",
        "flyte.org/app-org": "demo-org",
      });
      const status = first.status as {
        conditions: { type: string; status: string }[];
        latestReadyRevisionName: string;
        url: string;
        observedGeneration: number;
      };
      assert.deepEqual(status.conditions.map((c) => `${c.type}=${c.status}`), ["ConfigurationsReady=True", "Ready=True", "RoutesReady=True"]);
      assert.equal(status.latestReadyRevisionName, "streamlit-hello-flytesnacks-development-00001");
      assert.equal(status.url, "http://streamlit-hello-flytesnacks-development.flyte.example.com");
      assert.equal(status.observedGeneration, 1);
      const rev = sandbox.get("revisions", "flyte", status.latestReadyRevisionName)!;
      assert.equal((rev.status as { actualReplicas: number }).actualReplicas, 1);
      assert.equal(rev.metadata.labels!["serving.knative.dev/service"], "streamlit-hello-flytesnacks-development");
      // Index 3 is failed, index 4 stopped.
      const failed = created[3]!.status as { conditions: { type: string; status: string; reason?: string }[] };
      assert.deepEqual(failed.conditions.map((c) => `${c.type}=${c.status}:${c.reason}`), [
        "ConfigurationsReady=False:ContainerMissing",
        "Ready=False:RevisionFailed",
        "RoutesReady=False:RevisionFailed",
      ]);
      assert.equal(created[4]!.metadata.labels!["flyte.org/app-stopped"], "true");
      assert.equal(sandbox.list("revisions", "flyte").length, 5);
    });
  });

  test("startDemoActivity keeps changing apps until its signal aborts", async () => {
    await withSandbox({}, async ({ sandbox, api }) => {
      seedDemo(sandbox, { count: 4 });
      const rv = sandbox.resourceVersion;
      const w = await openWatch(`${api}/namespaces/flyte/services?watch=1&resourceVersion=${rv}`);
      const ac = new AbortController();
      // On a virtual clock: each interval passes when the test says so.
      const clock = new VirtualClock();
      const activity = startDemoActivity(sandbox, { intervalMs: 2, signal: ac.signal, seed: 7, clock });
      try {
        for (let i = 0; i < 1000 && activity.steps < 3; i++) clock.advance(2);
        const events = await w.take(3);
        for (const e of events) assert.ok(["ADDED", "MODIFIED", "DELETED"].includes(e.type), e.type);
      } finally {
        ac.abort();
        await w.cancel();
      }
      assert.ok(activity.steps > 0);
      // The demo changes the sandbox only from its timer: none left armed means no change can follow
      // (checked on the timer itself, not by watching the resourceVersion for a while).
      assert.equal(clock.pending("demo").length, 0, "the aborted activity keeps no timer");
      assert.ok(Number(sandbox.resourceVersion) > Number(rv));
    });
  });
});

describe("sandbox CLI arguments", () => {
  test("defaults, both value syntaxes, and readable errors", () => {
    assert.deepEqual(parseCliArgs([]), { port: 8001, host: "127.0.0.1", token: undefined, seed: 5, activityMs: 2000, help: false });
    assert.deepEqual(parseCliArgs(["--port", "0", "--host=0.0.0.0", "--token", "abc", "--seed=2", "--activity-ms", "0"]), {
      port: 0,
      host: "0.0.0.0",
      token: "abc",
      seed: 2,
      activityMs: 0,
      help: false,
    });
    assert.equal(parseCliArgs(["--help"]).help, true);
    assert.throws(() => parseCliArgs(["--port", "http"]), /invalid --port: must be a whole number/);
    assert.throws(() => parseCliArgs(["--port", "70000"]), /invalid --port/);
    assert.throws(() => parseCliArgs(["--nope"]), /unknown option: --nope/);
    assert.throws(() => parseCliArgs(["--seed"]), /--seed needs a value/);
    assert.throws(() => parseCliArgs(["stray"]), /unexpected argument: stray/);
  });
});
