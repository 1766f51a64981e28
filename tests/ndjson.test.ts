import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { NdjsonError, ndjsonLines, ndjsonValues } from "../src/watch/ndjson.ts";
import { serveFetch } from "../src/serve.ts";

const enc = new TextEncoder();

/** A stream that yields the given byte chunks and records whether it was cancelled. */
function chunked(
  chunks: Uint8Array[],
  options: { endless?: boolean } = {},
): { stream: ReadableStream<Uint8Array>; cancelled: () => boolean } {
  let cancelled = false;
  let i = 0;
  const stream = new ReadableStream<Uint8Array>({
    pull(c) {
      if (i < chunks.length) c.enqueue(chunks[i++]!);
      else if (options.endless) return new Promise<void>(() => {}); // like an open connection
      else c.close();
    },
    cancel() {
      cancelled = true;
    },
  });
  return { stream, cancelled: () => cancelled };
}

/** Splits bytes at the given offsets. */
function splitAt(bytes: Uint8Array, cuts: number[]): Uint8Array[] {
  const out: Uint8Array[] = [];
  let prev = 0;
  for (const c of [...cuts, bytes.length]) {
    out.push(bytes.slice(prev, c));
    prev = c;
  }
  return out;
}

async function collect(stream: ReadableStream<Uint8Array>, maxLineBytes?: number): Promise<string[]> {
  const out: string[] = [];
  for await (const l of ndjsonLines(stream, { maxLineBytes })) out.push(l);
  return out;
}

describe("ndjsonLines (W2)", () => {
  const lines = ['{"a":"café ☕ 日本"}', '{"b":2}', '{"c":"\u{1F600}"}'];
  const bytes = enc.encode(lines.join("\n") + "\n");

  test("every possible single split point gives the same lines (mid-line and mid-UTF-8)", async () => {
    for (let cut = 0; cut <= bytes.length; cut++) {
      const got = await collect(chunked(splitAt(bytes, [cut])).stream);
      assert.deepEqual(got, lines, `split at ${cut}`);
    }
  });

  test("one byte per chunk", async () => {
    const chunks = Array.from(bytes, (b) => new Uint8Array([b]));
    assert.deepEqual(await collect(chunked(chunks).stream), lines);
  });

  test("CRLF, blank lines and a last line without newline", async () => {
    const text = '{"x":1}\r\n\r\n\n   \n{"y":2}\r\n{"z":3}';
    assert.deepEqual(await collect(chunked([enc.encode(text)]).stream), ['{"x":1}', '{"y":2}', '{"z":3}']);
  });

  test("a CR split from its LF across chunks", async () => {
    const chunks = [enc.encode('{"x":1}\r'), enc.encode('\n{"y":2}')];
    assert.deepEqual(await collect(chunked(chunks).stream), ['{"x":1}', '{"y":2}']);
  });

  test("a multi-megabyte line split in many chunks", async () => {
    const big = JSON.stringify({ data: "x".repeat(5 * 1024 * 1024) });
    const all = enc.encode(big + "\n" + '{"after":true}\n');
    const cuts: number[] = [];
    for (let i = 65_536; i < all.length; i += 65_536) cuts.push(i);
    const got = await collect(chunked(splitAt(all, cuts)).stream);
    assert.equal(got.length, 2);
    assert.equal(got[0]!.length, big.length);
    assert.equal(got[1], '{"after":true}');
  });

  test("a line over maxLineBytes fails clearly and cancels the stream", async () => {
    const src = chunked([enc.encode('{"ok":1}\n'), enc.encode("x".repeat(600)), enc.encode("y".repeat(600))], { endless: true });
    await assert.rejects(collect(src.stream, 1000), (err: unknown) => {
      assert.ok(err instanceof NdjsonError);
      assert.equal(err.kind, "line-too-long");
      assert.equal(err.line, 2);
      assert.match(err.message, /exceeds 1000 bytes/);
      return true;
    });
    assert.equal(src.cancelled(), true);
  });

  test("an over-long line that arrives whole in one chunk is also rejected", async () => {
    const src = chunked([enc.encode("z".repeat(2000) + "\n")]);
    await assert.rejects(collect(src.stream, 1000), /line-too-long/);
  });

  test("breaking out of the loop cancels the reader", async () => {
    const src = chunked([enc.encode('{"a":1}\n{"b":2}\n'), enc.encode('{"c":3}\n')], { endless: true });
    for await (const _ of ndjsonLines(src.stream)) break;
    assert.equal(src.cancelled(), true);
  });

  test("reading to the end does not cancel", async () => {
    const src = chunked([enc.encode('{"a":1}\n')]);
    await collect(src.stream);
    assert.equal(src.cancelled(), false);
  });
});

describe("ndjsonValues", () => {
  test("parses each line", async () => {
    const src = chunked([enc.encode('{"type":"ADDED","object":{"n":1}}\n[1,2]\n')]);
    const got: unknown[] = [];
    for await (const v of ndjsonValues(src.stream)) got.push(v);
    assert.deepEqual(got, [{ type: "ADDED", object: { n: 1 } }, [1, 2]]);
  });

  test("a malformed line is an NdjsonError with line number and excerpt, and cancels the stream", async () => {
    const src = chunked([enc.encode('{"ok":1}\n{"type":"ADDED","object":{\n{"never":1}\n')], { endless: true });
    const got: unknown[] = [];
    await assert.rejects(
      (async () => {
        for await (const v of ndjsonValues(src.stream)) got.push(v);
      })(),
      (err: unknown) => {
        assert.ok(err instanceof NdjsonError);
        assert.equal(err.kind, "malformed-json");
        assert.equal(err.line, 2);
        assert.equal(err.excerpt, '{"type":"ADDED","object":{');
        return true;
      },
    );
    assert.deepEqual(got, [{ ok: 1 }]);
    assert.equal(src.cancelled(), true);
  });

  test("over real HTTP: chunks dripped by a loopback server, then a mid-line cut is an error", async () => {
    const payload = enc.encode('{"a":"é"}\n{"b":2}\n{"c":');
    // What the client has read so far. The server sends its next piece only once the client has
    // read the previous one (so every piece arrives on its own), and cuts only once the client has
    // read every byte: cutting earlier races the client's reads — the runtime errors the body
    // stream (or the peer's RST drops the socket's unread bytes) and lines not yet read are lost
    // (Bun under load lost {"b":2} that way when the server dripped on a 1 ms timer).
    let received = 0;
    let reads = 0;
    let wake: (() => void) | undefined;
    const onChunk = (n: number) => {
      received += n;
      reads++;
      wake?.();
    };
    const receivedAtLeast = async (n: number) => {
      while (received < n) await new Promise<void>((r) => (wake = r));
    };
    const server = await serveFetch(() => {
      let i = 0;
      const body = new ReadableStream<Uint8Array>({
        async pull(c) {
          await receivedAtLeast(i);
          if (i < payload.length) {
            c.enqueue(payload.slice(i, i + 3));
            i += 3;
          } else {
            c.error(new Error("cut"));
          }
        },
      });
      return new Response(body);
    });
    try {
      const res = await fetch(server.url);
      const got: unknown[] = [];
      await assert.rejects(async () => {
        for await (const v of ndjsonValues(res.body!, { onChunk })) got.push(v);
      });
      assert.deepEqual(got, [{ a: "é" }, { b: 2 }]);
      assert.equal(received, payload.length, "the client read every byte before the cut");
      assert.ok(reads >= Math.ceil(payload.length / 3), `the body arrived in pieces (${reads} reads)`);
    } finally {
      await server.close();
    }
  });
});
