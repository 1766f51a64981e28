/**
 * The Connect-protocol Watch body written from shared frames (src/service/connect/frames.ts): binary
 * bytes are connect-es's own serialization of the same messages, JSON carries the same values
 * (the event's own JSON, which a strict parse accepts), every subscriber
 * gets the same bytes, the end-stream frame carries the resume position and today's errors, and a
 * stream refused at admission or ended by `connect-timeout-ms` ends as it did on connect-es. These
 * tests pass on the connect-es body too (the commit before src/service/connect/frames.ts, then connect-frames.ts): that is the oracle.
 */
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { fromBinary, fromJsonString, toJson } from "@bufbuild/protobuf";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createMethodSerializationLookup, encodeEnvelope } from "@connectrpc/connect/protocol";
import { createConnectTransport } from "@connectrpc/connect-web";
import { AppService, WatchResponseSchema } from "../src/flyte/proto/app_service_pb.ts";
import { VirtualClock } from "../src/watch/clock.ts";
import { ksvc, ksvcName, startTestService, statusWithMessage, type TestService, within } from "./helpers/service.ts";

// connect-es's own serializers for Watch's output, as its handler builds them (default options).
const serialization = createMethodSerializationLookup(AppService.method.watch!, undefined, undefined, {
  readMaxBytes: 0xffffffff,
  writeMaxBytes: 0xffffffff,
});

interface Frame {
  flags: number;
  /** The whole envelope: flags, length, data. */
  bytes: Uint8Array;
  data: Uint8Array;
}

/** A raw Connect Watch over fetch, read envelope by envelope. */
class RawWatch {
  readonly frames: Frame[] = [];
  readonly res: Response;
  readonly #reader: ReadableStreamDefaultReader<Uint8Array>;
  #buf = new Uint8Array(0);

  private constructor(res: Response) {
    this.res = res;
    this.#reader = res.body!.getReader();
  }

  static async open(s: TestService, binary: boolean, headers: Record<string, string> = {}, prefix = "/internal"): Promise<RawWatch> {
    const body = binary ? new Uint8Array(5) : encodeEnvelope(0, new TextEncoder().encode("{}"));
    const res = await fetch(`${s.url}${prefix}/flyteidl2.app.AppService/Watch`, {
      method: "POST",
      headers: { "content-type": binary ? "application/connect+proto" : "application/connect+json", "connect-protocol-version": "1", ...headers },
      body,
    });
    return new RawWatch(res);
  }

  async next(): Promise<Frame> {
    for (;;) {
      if (this.#buf.length >= 5) {
        const len = new DataView(this.#buf.buffer, this.#buf.byteOffset).getUint32(1);
        if (this.#buf.length >= 5 + len) {
          const bytes = this.#buf.slice(0, 5 + len);
          this.#buf = this.#buf.slice(5 + len);
          const frame = { flags: bytes[0]!, bytes, data: bytes.subarray(5) };
          this.frames.push(frame);
          return frame;
        }
      }
      const { value, done } = await this.#reader.read();
      if (done) throw new Error(`stream ended with ${this.#buf.length} bytes of a partial envelope`);
      const next = new Uint8Array(this.#buf.length + value.length);
      next.set(this.#buf);
      next.set(value, this.#buf.length);
      this.#buf = next;
    }
  }

  async take(n: number): Promise<Frame[]> {
    const out: Frame[] = [];
    for (let i = 0; i < n; i++) out.push(await this.next());
    return out;
  }

  cancel(): Promise<void> {
    return this.#reader.cancel().catch(() => {});
  }
}

const text = (b: Uint8Array) => new TextDecoder().decode(b);

/** What connect-es sends for the message in `frame`: decode it, serialize it with connect-es, envelope it. */
function connectEsBytes(frame: Frame, binary: boolean): Uint8Array {
  const msg = binary ? fromBinary(WatchResponseSchema, frame.data) : fromJsonString(WatchResponseSchema, text(frame.data));
  const enveloped = encodeEnvelope(0, serialization.getO(binary).serialize(msg));
  return enveloped;
}

function decoded(frame: Frame, binary: boolean): unknown {
  return toJson(WatchResponseSchema, binary ? fromBinary(WatchResponseSchema, frame.data) : fromJsonString(WatchResponseSchema, text(frame.data)));
}

describe("Connect Watch frames", () => {
  test("JSON and binary frames are connect-es's bytes, two subscribers get identical bytes, and the end-stream trailer carries the resume position", async () => {
    const s = await startTestService();
    const streams: RawWatch[] = [];
    try {
      const json = [await RawWatch.open(s, false), await RawWatch.open(s, false, {}, "")];
      const bin = [await RawWatch.open(s, true), await RawWatch.open(s, true, {}, "")];
      streams.push(...json, ...bin);
      for (const w of streams) {
        assert.equal(w.res.status, 200);
        assert.match(w.res.headers.get("appwatch-resume") ?? "", /./, "resume header from the start item");
        assert.equal(w.res.headers.get("appwatch-start"), "snapshot");
      }
      assert.equal(json[0]!.res.headers.get("content-type"), "application/connect+json");
      assert.equal(bin[0]!.res.headers.get("content-type"), "application/connect+proto");
      for (const w of streams) await w.take(6);
      s.sb.create("services", ksvc("frames", "dev", "one"));
      s.sb.updateStatus("services", "flyte", ksvcName("frames", "dev", "one"), statusWithMessage("ready now"));
      for (const w of streams) await w.take(2);

      for (const [binary, pair] of [[false, json], [true, bin]] as const) {
        for (const w of pair) {
          for (const f of w.frames) {
            assert.equal(f.flags, 0);
            if (binary) assert.deepEqual(f.bytes, connectEsBytes(f, binary), "byte-identical to connect-es (binary)");
            else {
              // JSON: the event's own JSON (shared with WebSocket and SSE), not connect-es's re-serialization:
              // the same values (key order aside), and a strict parse (no unknown fields) accepts it.
              const ours = JSON.parse(text(f.data));
              assert.deepEqual(ours, JSON.parse(text(connectEsBytes(f, false).subarray(5))), `the values connect-es sends: ${text(f.data)}`);
              assert.equal(text(f.data), JSON.stringify(ours), "one compact JSON text");
            }
          }
        }
        // Two subscribers of the same target: the same bytes for every event, snapshot and live.
        assert.deepEqual(pair[0]!.frames.map((f) => f.bytes), pair[1]!.frames.map((f) => f.bytes));
      }
      // The two codecs carry the same messages.
      assert.deepEqual(json[0]!.frames.map((f) => decoded(f, false)), bin[0]!.frames.map((f) => decoded(f, true)));
      const live = json[0]!.frames.slice(6).map((f) => JSON.parse(text(f.data)));
      assert.equal(live[0].createEvent.app.metadata.id.name, "one");
      assert.equal(live[1].updateEvent.updatedApp.metadata.id.name, "one");

      // Shutdown: an end-stream frame with `unavailable` and the resume position as trailer, in connect-es's JSON.
      const stopping = s.stop();
      for (const w of streams) {
        const end = await w.next();
        assert.equal(end.flags, 2, "end-stream flag");
        const parsed = JSON.parse(text(end.data));
        assert.deepEqual(Object.keys(parsed), ["error", "metadata"]);
        assert.equal(parsed.error.code, "unavailable");
        assert.equal(typeof parsed.error.message, "string");
        assert.deepEqual(Object.keys(parsed.metadata), ["appwatch-resume"]);
        assert.equal(parsed.metadata["appwatch-resume"].length, 1);
        assert.match(parsed.metadata["appwatch-resume"][0], /./);
        assert.equal(text(end.data), JSON.stringify({ error: { code: "unavailable", message: parsed.error.message }, metadata: parsed.metadata }));
      }
      await stopping;
    } finally {
      await s.stop();
      await Promise.all(streams.map((w) => w.cancel()));
    }
  });

  test("the trailer's resume position resumes the stream; a stream refused at admission ends with resource_exhausted; connect-timeout-ms ends the stream without an error", async () => {
    // The app's time is virtual: the client's deadline passes when the test says so, not after a sleep.
    const clock = new VirtualClock();
    const s = await startTestService({ maxConnectionsPerClient: 1 }, { clock });
    try {
      const first = await RawWatch.open(s, false, { "connect-timeout-ms": "1500" });
      await first.take(6);
      s.sb.create("services", ksvc("frames", "dev", "two"));
      await first.take(1);
      // Refused at admission (one stream per client): an end-stream frame only, as connect-es wrote it.
      const refused = await RawWatch.open(s, false);
      assert.equal(refused.res.status, 200);
      const end = await refused.next();
      assert.equal(end.flags, 2);
      const err = JSON.parse(text(end.data));
      assert.deepEqual(Object.keys(err), ["error"]);
      assert.equal(err.error.code, "resource_exhausted");
      const client = createClient(AppService, createConnectTransport({ baseUrl: `${s.url}/internal` })) as unknown as {
        watch(req: unknown): AsyncIterable<unknown>;
      };
      await assert.rejects(async () => {
        for await (const _ of client.watch({}));
      }, (e: unknown) => ConnectError.from(e).code === Code.ResourceExhausted);

      // The client's deadline ends the stream: no error, the position as trailer. (connect-es wrote
      // that end-stream frame only once the session had another event: one is created after the deadline.)
      // Armed at the handoff, with what is left of 1.5 s.
      const deadline = await within(clock.next("connect-deadline"), "a connect-deadline timer on the app's clock");
      assert.ok(deadline.delay > 0 && deadline.delay <= 1500, `the deadline is what is left of the client's: ${deadline.delay} ms`);
      clock.advance(deadline.delay);
      s.sb.create("services", ksvc("frames", "dev", "late"));
      const last = await first.next();
      assert.equal(last.flags, 2);
      const trailer = JSON.parse(text(last.data));
      assert.deepEqual(Object.keys(trailer), ["metadata"]);
      const token = trailer.metadata["appwatch-resume"][0];
      assert.match(token, /./);

      // Resuming after that position: no snapshot, the events after it only.
      const resumed = await RawWatch.open(s, true, { "appwatch-resume": token });
      assert.equal(resumed.res.headers.get("appwatch-start"), "resumed");
      s.sb.create("services", ksvc("frames", "dev", "three"));
      const names: string[] = [];
      while (!names.includes("three")) {
        const next = await resumed.next();
        assert.equal(next.flags, 0);
        names.push((decoded(next, true) as { createEvent: { app: { metadata: { id: { name: string } } } } }).createEvent.app.metadata.id.name);
      }
      assert.ok(names.length <= 2 && names.every((n) => n === "late" || n === "three"), `only events after the position: ${names}`);
      await resumed.cancel();
    } finally {
      await s.stop();
    }
  });
});
