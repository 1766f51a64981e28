/**
 * The transport's `fetch` over real loopback HTTP, on every runtime: on Node it is the adapter over
 * undici's `dispatcher.request` (`undiciRequestFetch` in `src/kube/transport.ts`), on Deno and Bun
 * their own `fetch` — the engine sees the same `Response` semantics either way: status, headers,
 * a byte-stream body that arrives in pieces as the server writes them, an error status with its
 * body, a connection dropped mid-body as an error (never a clean end), cancel and abort closing
 * the connection, a request body and headers sent as given.
 */
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { createTransport, type Transport } from "../src/kube/transport.ts";
import { KubeClient } from "../src/kube/client.ts";
import { KubeApiError } from "../src/kube/status.ts";
import { ndjsonValues } from "../src/watch/ndjson.ts";

type Handler = (req: IncomingMessage, res: ServerResponse, body: string) => void;

async function withServer(handler: Handler, run: (url: string, t: Transport, closed: Promise<void>) => Promise<void>): Promise<void> {
  let closedResolve!: () => void;
  const closed = new Promise<void>((resolve) => (closedResolve = resolve));
  const server = createServer((req, res) => {
    let body = "";
    req.setEncoding("utf8");
    req.on("data", (c: string) => (body += c));
    req.on("end", () => handler(req, res, body));
    res.on("close", () => closedResolve());
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const t = await createTransport({ insecureSkipVerify: false }, { server: url, closeGraceMs: 100 });
  try {
    await run(url, t, closed);
  } finally {
    await t.close();
    server.closeAllConnections?.();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}

async function readAll(body: ReadableStream<Uint8Array>): Promise<{ text: string; chunks: number }> {
  const reader = body.getReader();
  const parts: Uint8Array[] = [];
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    parts.push(new Uint8Array(value));
  }
  const all = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    all.set(p, at);
    at += p.length;
  }
  return { text: new TextDecoder().decode(all), chunks: parts.length };
}

/** A promise the test opens when something has happened: server and client step in turn, not by the clock. */
function signal(): { promise: Promise<void>; open: () => void } {
  let open!: () => void;
  const promise = new Promise<void>((resolve) => (open = resolve));
  return { promise, open };
}

describe("the transport's fetch over loopback HTTP", () => {
  test("a streamed 200: status, headers, and the body as the server writes it, piece by piece", async () => {
    // The server writes line i+1 only after the client has parsed line i: each piece reaches the
    // client while the response is still open (nothing is buffered until the end).
    const seen = Array.from({ length: 5 }, signal);
    await withServer(async (_req, res) => {
      res.writeHead(200, { "content-type": "application/json", "x-test": "yes" });
      for (let i = 0; i < 5; i++) {
        res.write(`{"type":"ADDED","i":${i},"s":"ü€"}\n`);
        await seen[i]!.promise;
      }
      res.end();
    }, async (url, t) => {
      const res = await t.fetch(`${url}/watch?x=1`, { method: "GET", headers: { accept: "application/json" } });
      assert.equal(res.status, 200);
      assert.equal(res.ok, true);
      assert.equal(res.headers.get("content-type"), "application/json");
      assert.equal(res.headers.get("x-test"), "yes");
      const values: unknown[] = [];
      for await (const v of ndjsonValues(res.body!)) {
        values.push(v);
        seen[(v as { i: number }).i]!.open();
      }
      assert.deepEqual(values.map((v) => (v as { i: number }).i), [0, 1, 2, 3, 4]);
      assert.equal((values[4] as { s: string }).s, "ü€");
    });
  });

  test("an error status keeps its body; through KubeClient it is a KubeApiError with the server's message", async () => {
    const status = { kind: "Status", apiVersion: "v1", status: "Failure", message: "services is forbidden: nope", reason: "Forbidden", code: 403 };
    await withServer((_req, res) => {
      res.writeHead(403, { "content-type": "application/json" });
      res.end(JSON.stringify(status));
    }, async (url, t) => {
      const res = await t.fetch(`${url}/api`, { method: "GET" });
      assert.equal(res.status, 403);
      assert.equal(res.ok, false);
      assert.deepEqual(await res.json(), status);
      const client = new KubeClient({ server: url, fetch: t.fetch });
      await assert.rejects(client.json({ path: "/api" }), (err: unknown) => {
        assert.ok(err instanceof KubeApiError, String(err));
        assert.equal(err.code, 403);
        assert.match(err.message, /services is forbidden: nope/);
        return true;
      });
    });
  });

  test("a connection dropped mid-body errors the body (never a clean end), and ndjsonValues with it", async () => {
    const gotTwo = signal();
    await withServer(async (req, res) => {
      res.writeHead(200, { "content-type": "application/json" });
      res.write(`{"type":"ADDED","i":0}\n{"type":"ADDED","i":1}\n{"type":"ADD`);
      await gotTwo.promise; // the client holds both whole lines (and maybe the half one) before the cut
      req.socket.destroy();
    }, async (url, t) => {
      const res = await t.fetch(`${url}/watch`, { method: "GET" });
      assert.equal(res.status, 200);
      const seen: number[] = [];
      await assert.rejects(
        (async () => {
          for await (const v of ndjsonValues(res.body!)) {
            seen.push((v as { i: number }).i);
            if (seen.length === 2) gotTwo.open();
          }
        })(),
        (err: unknown) => err instanceof Error,
      );
      assert.deepEqual(seen, [0, 1]);
    });
  });

  test("cancelling the body closes the connection", async () => {
    await withServer(async (_req, res) => {
      res.writeHead(200, { "content-type": "application/json" });
      res.write(`{"i":0}\n`);
      // …and the response stays open: only the client's cancel can end it.
    }, async (url, t, closed) => {
      const res = await t.fetch(`${url}/watch`, { method: "GET" });
      for await (const v of ndjsonValues(res.body!)) {
        assert.equal((v as { i: number }).i, 0);
        break; // cancels the reader
      }
      await closed; // the server saw the connection go
    });
  });

  test("an abort before the headers rejects with the reason; an abort during the body ends it", async () => {
    const arrived = signal();
    await withServer((req, res) => {
      if (req.url === "/slow-headers") {
        arrived.open(); // …and no answer until the client gives up
        return;
      }
      res.writeHead(200, { "content-type": "application/json" });
      res.write(`{"i":0}\n`);
      // …and nothing more until the client gives up.
    }, async (url, t) => {
      const ac = new AbortController();
      const reason = new Error("stopped by the caller");
      const slow = t.fetch(`${url}/slow-headers`, { method: "GET", signal: ac.signal });
      await arrived.promise; // the request is at the server, waiting for headers
      ac.abort(reason);
      await assert.rejects(slow, (err: unknown) => err === reason || (err as Error).name === "AbortError");

      const ac2 = new AbortController();
      const res = await t.fetch(`${url}/body`, { method: "GET", signal: ac2.signal });
      const reader = res.body!.getReader();
      const first = await reader.read();
      assert.equal(first.done, false);
      const pending = reader.read(); // nothing more is coming: this read waits
      ac2.abort(new Error("stop"));
      await assert.rejects(pending);
    });
  });

  test("a request body and headers arrive as given; a 204 has no body", async () => {
    await withServer((req, res, body) => {
      if (req.method === "POST") {
        res.writeHead(201, { "content-type": "application/json" });
        res.end(JSON.stringify({ method: req.method, url: req.url, body, auth: req.headers.authorization, ct: req.headers["content-type"] }));
        return;
      }
      res.writeHead(204);
      res.end();
    }, async (url, t) => {
      const res = await t.fetch(`${url}/apis/x?a=1&b=%2F`, {
        method: "POST",
        headers: { authorization: "Bearer abc", "content-type": "application/json" },
        body: JSON.stringify({ hello: "wörld" }),
      });
      assert.equal(res.status, 201);
      assert.deepEqual(await res.json(), {
        method: "POST",
        url: "/apis/x?a=1&b=%2F",
        body: JSON.stringify({ hello: "wörld" }),
        auth: "Bearer abc",
        ct: "application/json",
      });
      const empty = await t.fetch(`${url}/nothing`, { method: "DELETE" });
      assert.equal(empty.status, 204);
      assert.equal(await empty.text(), "");
    });
  });

  test("a large body arrives complete and in order", async () => {
    const line = JSON.stringify({ pad: "x".repeat(1000) });
    const n = 3000;
    await withServer((_req, res) => {
      res.writeHead(200, { "content-type": "application/json" });
      let i = 0;
      const more = () => {
        while (i < n) {
          if (!res.write(`${line.slice(0, -1)},"i":${i++}}\n`)) return void res.once("drain", more);
        }
        res.end();
      };
      more();
    }, async (url, t) => {
      const res = await t.fetch(`${url}/big`, { method: "GET" });
      const { text, chunks } = await readAll(res.body!);
      const lines = text.trimEnd().split("\n");
      assert.equal(lines.length, n);
      assert.equal((JSON.parse(lines[n - 1]!) as { i: number }).i, n - 1);
      assert.ok(chunks >= 1);
    });
  });
});
