/**
 * `--stream-buffer-bytes` (issue 24, F17): the bytes an SSE or Connect Watch body holds for a client
 * that does not read. The body is read in-process (`app.fetch`) and never consumed, so its queue is
 * the only buffer: no kernel socket buffer or runtime writer blurs the count (the composition with
 * no runtime adapter, as the worker-compose tests run it). The server must stop
 * taking events for it once the queue holds the setting's bytes — neither far below (it would stall
 * a client that reads) nor past it by more than the frame that crossed the mark. The default (1 MiB)
 * would take the whole 512 KiB snapshot, so each case fails if the setting is not wired through.
 */
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { encodeEnvelope } from "@connectrpc/connect/protocol";
import { createLogger } from "../src/log.ts";
import { startSandboxCluster } from "../src/sandbox/mod.ts";
import { compose } from "../src/service/compose.ts";
import { ksvc, ksvcName, statusWithMessage, testSettings, untilHub, waitFor } from "./helpers/service.ts";

const APPS = 64;
const PAD = 8 << 10; // 8 KiB per App: a 512 KiB snapshot
/** A frame's bytes beyond its padding (the App's other fields, the SSE or envelope framing), at most. */
const OVERHEAD = 4 << 10;

const watches = {
  sse: (fetch: (r: Request) => Response | Promise<Response>) =>
    fetch(new Request("http://appwatch.test/v1/watch?project=big&domain=dev", { headers: { accept: "text/event-stream" } })),
  connect: (fetch: (r: Request) => Response | Promise<Response>) =>
    fetch(new Request("http://appwatch.test/internal/flyteidl2.app.AppService/Watch", {
      method: "POST",
      headers: { "content-type": "application/connect+json", "connect-protocol-version": "1" },
      body: encodeEnvelope(0, new TextEncoder().encode(JSON.stringify({ project: { name: "big", domain: "dev" } }))),
    })),
};

describe("--stream-buffer-bytes bounds what a body holds for a client that does not read", () => {
  for (const [transport, open] of Object.entries(watches)) {
    for (const bytes of [16 << 10, 128 << 10]) {
      test(`${transport}, ${bytes >> 10} KiB: the body takes events up to the mark, then the session waits`, async () => {
        const cluster = await startSandboxCluster({ demoIntervalMs: 0 });
        const logs: string[] = [];
        const s = compose(testSettings({ streamBufferBytes: bytes }), { logger: createLogger({ level: "warn", sink: (l) => logs.push(l) }), cluster });
        let body: ReadableStream<Uint8Array> | null = null;
        try {
          await s.watching;
          for (let i = 0; i < APPS; i++) {
            cluster.sandbox.create("services", ksvc("big", "dev", `app-${i}`));
            cluster.sandbox.updateStatus("services", "flyte", ksvcName("big", "dev", `app-${i}`), statusWithMessage(`pad ${"p".repeat(PAD)}`));
          }
          const hub = async () => (await s.apps.list("big", "dev").catch(() => ({ apps: [] }))).apps.length;
          await untilHub(s.apps, async () => (await hub()) >= APPS, "the hub to hold every big app");

          const res = await open((r) => s.fetch(r));
          if (res.status !== 200) assert.fail(`${res.status}: ${await res.text()} ${logs.join("\n")}`);
          body = res.body;
          await waitFor(() => s.api.metrics.backpressureWaits >= 1, () => `the session to wait for the body (${s.api.metrics.framesSent("createEvent")} events taken)`);
          const taken = s.api.metrics.framesSent("createEvent");
          assert.ok(taken >= Math.floor(bytes / (PAD + OVERHEAD)), `${taken} events (about ${taken * PAD >> 10} KiB) taken before a ${bytes >> 10} KiB body was full`);
          assert.ok(taken <= Math.ceil(bytes / PAD) + 1, `${taken} events (at least ${taken * PAD >> 10} KiB) taken for a ${bytes >> 10} KiB body`);
        } finally {
          await body?.cancel().catch(() => {});
          await s.stop();
        }
      });
    }
  }
});
