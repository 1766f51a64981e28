/**
 * The `--grpc-port` listener's timeouts (issue 24: idle, preface-only and half-sent connections
 * stayed open forever), on a virtual clock over real sockets: a connection with no open stream is
 * closed exactly at `idleMs` (raw TCP that never speaks HTTP/2, a preface and nothing else, a
 * connection whose call is done); a request body still unfinished at `bodyMs` has its stream reset;
 * an open Watch stream keeps its connection however long it is quiet, and still gets events.
 */
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { connect as h2connect, type ClientHttp2Session } from "node:http2";
import { connect as tcpConnect } from "node:net";
import { listenGrpc } from "../src/service/adapters/grpc.ts";
import type { ListeningServer } from "../src/service/adapters/types.ts";
import { VirtualClock } from "../src/watch/clock.ts";
import { ksvc, startTestService, type TestService, within } from "./helpers/service.ts";

const IDLE = 5_000;
const BODY = 3_000;

async function listen(s: TestService): Promise<{ clock: VirtualClock; grpc: ListeningServer; port: number }> {
  const clock = new VirtualClock();
  const grpc = await listenGrpc(s.api.appService, { port: 0, hostname: "127.0.0.1", clock, timeouts: { idleMs: IDLE, bodyMs: BODY } });
  return { clock, grpc, port: grpc.port };
}

/** Resolves when `emitter` emits `event` (the signal a test waits for). */
const once = (emitter: { once(e: string, f: () => void): unknown }, event: string) => new Promise<void>((r) => emitter.once(event, () => r()));

/** A gRPC envelope of `{}` (an empty ListRequest / WatchRequest). */
const EMPTY = new Uint8Array([0, 0, 0, 0, 0]);

describe("gRPC listener timeouts (virtual clock, real sockets)", () => {
  test("a TCP connection that never sends the HTTP/2 preface is closed at idleMs, not before", async () => {
    const s = await startTestService();
    const { clock, grpc, port } = await listen(s);
    try {
      const socket = tcpConnect(port, "127.0.0.1");
      const closed = once(socket, "close");
      socket.on("error", () => {});
      socket.resume(); // read, so the server's FIN is seen
      const timer = await within(clock.next("grpc-idle"), "the idle timer of the new connection");
      assert.equal(timer.delay, IDLE);
      clock.advance(IDLE - 1);
      assert.equal(clock.pending("grpc-idle").length, 1, "not yet at idleMs - 1");
      assert.equal(socket.destroyed, false);
      clock.advance(1);
      await within(closed, "the server to close the silent connection");
    } finally {
      await grpc.close();
      await s.stop();
    }
  });

  test("a preface and no call: GOAWAY at idleMs; after a finished call the connection is idle again", async () => {
    const s = await startTestService();
    const { clock, grpc } = await listen(s);
    const sessions: ClientHttp2Session[] = [];
    try {
      const quiet = h2connect(grpc.url);
      sessions.push(quiet);
      quiet.on("error", () => {});
      const goaway = once(quiet, "goaway");
      await within(once(quiet, "connect"), "connect");
      await within(clock.next("grpc-idle"), "the idle timer");
      clock.advance(IDLE);
      await within(goaway, "GOAWAY to the idle connection");

      // One unary call, then nothing: idle from the end of the call.
      const used = h2connect(grpc.url);
      sessions.push(used);
      used.on("error", () => {});
      await within(once(used, "connect"), "connect");
      const req = used.request({ ":method": "POST", ":path": "/flyteidl2.app.AppService/List", "content-type": "application/grpc", te: "trailers" });
      req.on("data", () => {});
      req.end(EMPTY);
      await within(once(req, "close"), "the List call");
      const usedGoaway = once(used, "goaway");
      // The server arms the connection's idle timer again when the call's stream closes there.
      const again = await within(clock.next("grpc-idle"), "the idle timer, armed again when the call ended");
      assert.equal(clock.pending("grpc-idle").length, 1, "only the used connection's");
      clock.advanceTo(again.due - 1);
      assert.equal(used.closed, false);
      clock.advanceTo(again.due);
      await within(usedGoaway, "GOAWAY once the finished call's connection is idle");
    } finally {
      for (const x of sessions) x.destroy();
      await grpc.close();
      await s.stop();
    }
  });

  test("a request body unfinished at bodyMs: the stream is reset; a finished one clears the deadline", async () => {
    const s = await startTestService();
    const { clock, grpc } = await listen(s);
    const session = h2connect(grpc.url);
    session.on("error", () => {});
    try {
      const half = session.request({ ":method": "POST", ":path": "/flyteidl2.app.AppService/List", "content-type": "application/grpc", te: "trailers" });
      half.on("error", () => {});
      half.on("data", () => {});
      half.write(EMPTY.subarray(0, 2)); // two of five bytes, and the request never ends
      const timer = await within(clock.next("grpc-body"), "the body deadline");
      assert.equal(timer.delay, BODY);
      assert.equal(clock.pending("grpc-idle").length, 0, "a connection with an open stream is not idle");
      const reset = once(half, "close");
      clock.advance(BODY - 1);
      assert.equal(half.closed, false);
      clock.advance(1);
      await within(reset, "the half-sent stream to be reset");
      assert.equal(half.rstCode, 8, "NGHTTP2_CANCEL");

      const whole = session.request({ ":method": "POST", ":path": "/flyteidl2.app.AppService/List", "content-type": "application/grpc", te: "trailers" });
      whole.on("data", () => {});
      let trailers: Record<string, unknown> = {};
      whole.on("trailers", (t) => (trailers = t));
      whole.end(EMPTY);
      await within(once(whole, "close"), "the whole call");
      assert.equal(String(trailers["grpc-status"]), "0");
      assert.equal(clock.pending("grpc-body").length, 0, "no deadline left behind");
    } finally {
      session.destroy();
      await grpc.close();
      await s.stop();
    }
  });

  test("an open Watch keeps its connection however quiet it is, and still gets the next event", async () => {
    const s = await startTestService();
    const { clock, grpc } = await listen(s);
    const session = h2connect(grpc.url);
    session.on("error", () => {});
    try {
      const watch = session.request({ ":method": "POST", ":path": "/flyteidl2.app.AppService/Watch", "content-type": "application/grpc", te: "trailers" });
      watch.on("error", () => {});
      let text = "";
      let waiting: { needle: string; resolve: () => void } | undefined;
      const seen = (needle: string) => new Promise<void>((resolve) => (text.includes(needle) ? resolve() : (waiting = { needle, resolve })));
      watch.setEncoding("latin1");
      watch.on("data", (chunk: string) => {
        text += chunk;
        if (waiting && text.includes(waiting.needle)) waiting.resolve();
      });
      watch.end(EMPTY);
      await within(seen("llm"), "the snapshot (a demo app of project llm)");
      assert.equal(clock.pending("grpc-idle").length, 0, "no idle timer while the Watch is open");
      clock.advance(IDLE * 100);
      clock.advance(BODY * 100);
      assert.equal(watch.closed, false);
      s.sb.create("services", ksvc("quiet", "dev", "after-the-quiet"));
      await within(seen("after-the-quiet"), "the event after the quiet");
      watch.close();
    } finally {
      session.destroy();
      await grpc.close();
      await s.stop();
    }
  });
});
