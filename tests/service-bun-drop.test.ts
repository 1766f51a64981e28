/**
 * Bun silently drops a WebSocket message once the socket's buffer is past its
 * `backpressureLimit` (`send()` returns 0; runtimes.md §1.4). appwatch keeps
 * well under that limit (its own 1 MiB high-water mark), so this test turns the
 * high-water mark off to provoke a drop on purpose and checks that it never goes
 * unnoticed: the stream ends with 1013 and a reason, and the drop is counted.
 * Bun only — Deno and Node have no such drop (their buffers just grow, which the
 * high-water mark prevents; see service-backpressure.test.ts).
 */
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { AppK8sClient } from "../src/flyte/app-client.ts";
import { KubeClient } from "../src/kube/client.ts";
import { startSandbox } from "../src/sandbox/mod.ts";
import { loadAdapter } from "../src/service/adapters/types.ts";
import { createApp } from "../src/service/app.ts";
import { rawConnect, upgraded } from "./helpers/raw-ws.ts";
import { http, ksvc, ksvcName, metric, sleep, statusWithMessage, waitFor } from "./helpers/service.ts";

// deno-lint-ignore no-explicit-any
const isBun = (globalThis as any).Bun !== undefined;
const PAD = "x".repeat(4000);

describe("Bun's silent drop past its backpressure limit", () => {
  test("is detected: the stream ends with 1013 and appwatch_frames_dropped_by_runtime_total counts it", { skip: !isBun && "Bun only" }, async () => {
    const sb = await startSandbox({ bookmarkIntervalMs: 0 });
    const apps = new AppK8sClient({ client: new KubeClient({ server: sb.url, namespace: "flyte" }), namespace: "flyte", config: { watchBufferSize: 1_000_000 } });
    const adapter = await loadAdapter();
    // No high-water mark: frames go to Bun as fast as they come.
    const api = createApp({ client: apps, runtime: adapter, limits: { highWaterMark: 1 << 30 } });
    const server = await adapter.listen(api.app.fetch, { port: 0, hostname: "127.0.0.1" });
    try {
      await apps.startWatching();
      sb.sandbox.create("services", ksvc("drop", "dev", "a"));
      const raw = upgraded(await rawConnect(`${server.url}/v1/watch?project=drop&domain=dev`));
      raw.pause(); // never read: the kernel buffers fill, then Bun's
      const name = ksvcName("drop", "dev", "a");
      for (let i = 0; i < 40_000 && raw.closeFrame === undefined; i++) {
        sb.sandbox.updateStatus("services", "flyte", name, statusWithMessage(`step ${i} ${PAD}`));
        if (i % 200 === 0) {
          await sleep(1);
          if (metric((await http(`${server.url}/metrics`)).text, "appwatch_frames_dropped_by_runtime_total")! > 0) break;
        }
      }
      await waitFor(() => (api.metrics.framesDroppedByRuntime > 0), "Bun to drop a frame", 30_000);
      raw.resume();
      await waitFor(() => raw.closeFrame !== undefined || raw.ended, "the stream to end", 30_000);
      assert.equal(raw.closeFrame?.code, 1013);
      assert.match(raw.closeFrame?.reason ?? "", /send buffer overflow/);
      assert.ok(metric((await http(`${server.url}/metrics`)).text, "appwatch_frames_dropped_by_runtime_total")! >= 1);
    } finally {
      api.closeStreams();
      await apps.stopWatching();
      await server.close();
      await sb.close();
    }
  });
});
