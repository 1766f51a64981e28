/**
 * The gRPC listener's own HTTP/2 bridge (src/service/adapters/grpc.ts: `@connectrpc/connect`'s
 * universal handlers on `node:http2`): gzip both ways, identity, an unknown path, a bad gzip body.
 * (List/Get/Watch over gRPC at both prefixes are in tests/service-connect.test.ts.)
 */
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { connect as h2connect } from "node:http2";
import { Code, createClient } from "@connectrpc/connect";
import { compressionGzip, createGrpcTransport } from "@connectrpc/connect-node";
import { AppService } from "../src/flyte/proto/app_service_pb.ts";
import { startTestService } from "./helpers/service.ts";

interface Lister {
  list(req: object): Promise<{ apps: unknown[] }>;
}

/** One raw HTTP/2 POST; resolves with the status, the headers and the trailers. */
function rawPost(url: string, path: string, headers: Record<string, string>, body: Uint8Array) {
  return new Promise<{ status: number; headers: Record<string, unknown>; trailers: Record<string, unknown> }>((resolve, reject) => {
    const session = h2connect(url);
    session.on("error", reject);
    const req = session.request({ ":method": "POST", ":path": path, ...headers });
    let status = 0;
    let head: Record<string, unknown> = {};
    let trailers: Record<string, unknown> = {};
    req.on("response", (h) => {
      status = Number(h[":status"]);
      head = h;
    });
    req.on("trailers", (t) => (trailers = t));
    req.on("data", () => {});
    req.on("end", () => {
      session.close();
      resolve({ status, headers: head, trailers });
    });
    req.on("error", reject);
    req.end(body);
  });
}

describe("gRPC listener (HTTP/2 bridge)", () => {
  test("gzip requests and responses, identity, 404 for an unknown path, invalid gzip refused with a gRPC status", async () => {
    const s = await startTestService({ grpcPort: 0 });
    try {
      const url = s.grpcUrl!;
      const plain = createClient(AppService, createGrpcTransport({ baseUrl: url })) as unknown as Lister;
      const zipped = createClient(AppService, createGrpcTransport({ baseUrl: url, sendCompression: compressionGzip, acceptCompression: [compressionGzip] })) as unknown as Lister;
      const a = await plain.list({});
      const b = await zipped.list({});
      assert.equal(a.apps.length, 6);
      assert.equal(b.apps.length, a.apps.length);

      const missing = await rawPost(url, "/no.Such/Method", { "content-type": "application/grpc" }, new Uint8Array(0));
      assert.equal(missing.status, 404);

      // A frame flagged compressed (gzip) whose bytes are not gzip: invalid_argument (3), not a crash.
      const frame = new Uint8Array([1, 0, 0, 0, 3, 1, 2, 3]);
      const bad = await rawPost(url, "/flyteidl2.app.AppService/List", { "content-type": "application/grpc", "grpc-encoding": "gzip", te: "trailers" }, frame);
      const status = String(bad.trailers["grpc-status"] ?? bad.headers["grpc-status"]);
      assert.notEqual(status, "0", `bad gzip must fail: ${JSON.stringify(bad)}`);
      assert.equal(status, String(Code.InvalidArgument), JSON.stringify(bad));

    } finally {
      await s.stop();
    }
  });
});
