/**
 * AppService Watch's response headers with real clients on every transport (Connect JSON and
 * binary, gRPC-Web, on the HTTP port; gRPC, gRPC-Web and Connect on `--grpc-port`): they are sent
 * when the stream starts, before any event — so a Watch of a target with no apps still learns its
 * resume position (`appwatch-resume`) and how it started (`appwatch-start`) — and a resume token
 * that could not be honoured says why in `appwatch-resume-failed`, as the WebSocket start frame's
 * `resumeFailed` does (docs/protocol.md).
 */
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { createClient } from "@connectrpc/connect";
import { AppService } from "../src/flyte/proto/app_service_pb.ts";
import { bunHttpPort, transports } from "./helpers/connect-transports.ts";
import { type Json, startTestService, within } from "./helpers/service.ts";

interface Watcher {
  watch(req: Json, options: { signal: AbortSignal; headers?: Record<string, string>; onHeader?: (h: Headers) => void }): AsyncIterable<unknown>;
}

/** No app is in this project: the snapshot is empty and no event comes unless one is made. */
const EMPTY = { target: { case: "project", value: { name: "nobody", domain: "development" } } };

/** Starts a Watch and resolves with its response headers (the stream stays open until `stop`). */
function headersOf(client: Watcher, request: Json, headers: Record<string, string> = {}) {
  const stop = new AbortController();
  let onHeader!: (h: Headers) => void;
  const header = new Promise<Headers>((resolve) => (onHeader = resolve));
  const it = client.watch(request, { signal: stop.signal, headers, onHeader })[Symbol.asyncIterator]();
  const first = it.next().catch(() => undefined);
  return { header, first, stop: async () => { stop.abort(); await first; } };
}

describe("AppService Watch response headers", () => {
  for (const [kind, transport] of Object.entries(transports)) {
    const skip = bunHttpPort(kind) ? "Bun's HTTP server sends a streamed response's headers with its first chunk (oven-sh/bun#33660)" : false;
    test(`${kind}: the headers come when the stream starts, before any event, with the position`, { skip }, async () => {
      const s = await startTestService({ grpcPort: 0 });
      try {
        const client = createClient(AppService, transport(s)) as unknown as Watcher;
        const quiet = headersOf(client, EMPTY);
        try {
          // A hang guard, not a timing rule: without headers at the start this never resolves.
          const h = await within(quiet.header, `${kind}: response headers of a Watch with no events`);
          assert.match(h.get("appwatch-resume") ?? "", /./, "the position in the headers");
          assert.equal(h.get("appwatch-start"), "snapshot");
          assert.equal(h.get("appwatch-resume-failed"), null, "no resume asked, no failure");

          const resumed = headersOf(client, EMPTY, { "appwatch-resume": h.get("appwatch-resume")! });
          const r = await within(resumed.header, `${kind}: headers of a resumed Watch`);
          assert.equal(r.get("appwatch-start"), "resumed");
          assert.equal(r.get("appwatch-resume-failed"), null);
          await resumed.stop();
        } finally {
          await quiet.stop();
        }
      } finally {
        await s.stop();
      }
    });

    test(`${kind}: a resume that fell back to a snapshot says why in appwatch-resume-failed`, async () => {
      const s = await startTestService({ grpcPort: 0 });
      try {
        const client = createClient(AppService, transport(s)) as unknown as Watcher;
        // Every app: the snapshot's first event brings the headers on every runtime.
        for (const [token, failed] of [["not-a-token", "malformed"], [undefined, null]] as const) {
          const w = headersOf(client, {}, token ? { "appwatch-resume": token } : {});
          try {
            const h = await within(w.header, `${kind}: headers of a Watch (resume ${token})`);
            assert.equal(h.get("appwatch-start"), "snapshot", `resume ${token}`);
            assert.equal(h.get("appwatch-resume-failed"), failed, `resume ${token}`);
          } finally {
            await w.stop();
          }
        }
      } finally {
        await s.stop();
      }
    });
  }
});
