/**
 * The Node adapter's direct SSE body (`DirectBody`, `adapters/node.ts`): bytes go straight to the
 * `ServerResponse` with the status and headers the app's middleware settled on, what is written
 * before the head follows it, the client leaving closes it, and its backpressure is the socket's.
 * Node only: the other runtimes stream a `ReadableStream` body (no `directBody`).
 */
import assert from "node:assert/strict";
import { connect } from "node:net";
import { describe, test } from "node:test";
import { Hono } from "hono";
import { runtimeName } from "../src/runtime.ts";
import type { DirectBody, ListeningServer, ServerAdapter } from "../src/service/adapters/types.ts";

const onNode = runtimeName() === "node";
const encoder = new TextEncoder();
const bytes = (s: string) => encoder.encode(s);

async function adapter(): Promise<ServerAdapter> {
  const { createAdapter } = await import("../src/service/adapters/node.ts");
  return createAdapter({ maxPayloadBytes: 65536, pingSeconds: 30 });
}

/** A server whose `/s` route runs `body` on a direct body and answers with a bodiless 200; middleware adds a header afterwards. */
async function serve(route: (direct: DirectBody | undefined) => Response | Promise<Response>): Promise<{ server: ListeningServer; a: ServerAdapter }> {
  const a = await adapter();
  const app = new Hono();
  app.use("*", async (c, next) => {
    await next();
    c.res.headers.set("x-after", "middleware");
  });
  app.get("/s", (c) => route(a.directBody?.(c)));
  const server = await a.listen(app.fetch, { port: 0, hostname: "127.0.0.1" });
  return { server, a };
}

/** Reads a fetch body until `want` has been seen (a signal: the bytes themselves). */
async function readUntil(reader: ReadableStreamDefaultReader<Uint8Array>, want: string, have = ""): Promise<string> {
  const decoder = new TextDecoder();
  while (!have.includes(want)) {
    const { value, done } = await reader.read();
    if (done) break;
    have += decoder.decode(value, { stream: true });
  }
  return have;
}

describe("Node direct SSE body", { skip: !onNode && "Node only: the other runtimes have no directBody" }, () => {
  test("the head comes from the final Response (middleware included); bytes written before it follow it, later ones at once", async () => {
    let body!: DirectBody;
    const { server } = await serve((direct) => {
      assert.ok(direct, "the Node adapter offers a direct body on an HTTP/1.1 response");
      body = direct;
      assert.equal(direct.write(bytes("one\n")), true, "held until the head is sent");
      return new Response(null, { status: 200, headers: { "content-type": "text/event-stream" } });
    });
    try {
      const res = await fetch(`${server.url}/s`);
      assert.equal(res.status, 200);
      assert.equal(res.headers.get("content-type"), "text/event-stream");
      assert.equal(res.headers.get("x-after"), "middleware", "a header set after next() is sent");
      const reader = res.body!.getReader();
      assert.equal(await readUntil(reader, "one\n"), "one\n");
      body.write(bytes("two\n"));
      assert.equal(await readUntil(reader, "two\n"), "two\n", "a later write reaches the client without more input");
      let closed = 0;
      body.onClose(() => closed++);
      body.end();
      assert.equal((await reader.read()).done, true, "end() ends the response");
      assert.equal(body.write(bytes("late")), false, "a closed body takes nothing");
      assert.ok(closed <= 1);
    } finally {
      await server.close();
    }
  });

  test("end() before the head: what was written still goes out, then the response ends", async () => {
    const { server } = await serve((direct) => {
      direct!.write(bytes("only\n"));
      direct!.end();
      return new Response(null, { headers: { "content-type": "text/event-stream" } });
    });
    try {
      const res = await fetch(`${server.url}/s`);
      assert.equal(await res.text(), "only\n");
    } finally {
      await server.close();
    }
  });

  test("a handler that answers with a body of its own after all: that answer goes out and the direct body closes", async () => {
    let closed = 0;
    const { server } = await serve((direct) => {
      direct!.onClose(() => closed++);
      direct!.write(bytes("never\n"));
      return new Response("refused", { status: 503 });
    });
    try {
      const res = await fetch(`${server.url}/s`);
      assert.equal(res.status, 503);
      assert.equal(await res.text(), "refused");
      assert.equal(closed, 1);
    } finally {
      await server.close();
    }
  });

  test("the client leaving closes the body (onClose once); a reader that stops makes it report above the mark until it reads again", async () => {
    let body!: DirectBody;
    let opened!: () => void;
    const open = new Promise<void>((r) => opened = r);
    const { server } = await serve((direct) => {
      body = direct!;
      queueMicrotask(opened);
      return new Response(null, { headers: { "content-type": "text/event-stream" } });
    });
    try {
      // A raw client that reads the head, then stops reading.
      const sock = connect(server.port, "127.0.0.1");
      await new Promise<void>((r) => sock.once("connect", () => r()));
      sock.write("GET /s HTTP/1.1\r\nhost: x\r\n\r\n");
      const head = await new Promise<string>((r) => sock.once("data", (d) => r(String(d))));
      assert.match(head, /^HTTP\/1\.1 200/);
      await open;
      sock.pause();
      const MARK = 256 * 1024;
      const chunk = new Uint8Array(64 * 1024).fill(0x61);
      let written = 0;
      // Write until the runtime holds more than the mark (the kernel's buffers fill first); bounded.
      while (!body.above(MARK) && written < 256 * 1024 * 1024) {
        body.write(chunk);
        written += chunk.length;
        if (written % (4 * 1024 * 1024) === 0) await new Promise((r) => setImmediate(r)); // let the socket flush what it can
      }
      assert.ok(body.above(MARK), `above the mark after ${written} bytes to a reader that stopped`);
      const drained = body.drained(MARK, new AbortController().signal);
      sock.resume(); // reading again: the queue drains below the mark
      await drained;
      assert.equal(body.above(MARK), false);
      let closed = 0;
      const gone = new Promise<void>((r) =>
        body.onClose(() => {
          closed++;
          r();
        })
      );
      sock.destroy();
      await gone;
      assert.equal(closed, 1);
      assert.equal(body.write(chunk), false, "after the client left, writes are refused");
    } finally {
      await server.close();
    }
  });
});
