/**
 * The Deno WebSocket sink answers "above the mark?" from an upper bound while it can, so it does
 * not pay an op call per send. The rule the slow-consumer policies rely on: it never says "not
 * above" while more than the mark is queued. Checked against a fake socket whose queue grows by
 * the UTF-8 bytes of each frame and drains at random, over every answer of a random run. (The
 * real socket is covered on Deno by the backpressure suite.)
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { DenoSocket } from "../src/service/adapters/deno-socket.ts";

/** A WebSocket stand-in: `bufferedAmount` counts its reads. */
class FakeSocket {
  readyState = 1;
  queued = 0;
  reads = 0;
  get bufferedAmount(): number {
    this.reads++;
    return this.queued;
  }
  send(text: string): void {
    this.queued += new TextEncoder().encode(text).length;
  }
}

/** A small deterministic PRNG (mulberry32), so a failure can be replayed. */
function prng(seed: number): () => number {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

test("DenoSocket.above never answers false while more than the mark is queued", () => {
  const frames = ["x".repeat(2_000), "é".repeat(700), "😀".repeat(300), "{}"];
  for (const seed of [1, 2, 3, 4, 5]) {
    const rnd = prng(seed);
    const raw = new FakeSocket();
    const sink = new DenoSocket(raw);
    const mark = 16_384;
    let answers = 0;
    for (let i = 0; i < 5_000; i++) {
      const r = rnd();
      if (r < 0.6) sink.send(frames[Math.floor(rnd() * frames.length)]!);
      else if (r < 0.8) raw.queued = Math.floor(raw.queued * rnd()); // the network took some
      const above = sink.above(mark);
      answers++;
      const queued = raw.queued;
      if (queued > mark) assert.equal(above, true, `seed ${seed}, step ${i}: ${queued} queued > ${mark} but the sink said not above`);
      else assert.equal(above, false, `seed ${seed}, step ${i}: ${queued} queued ≤ ${mark} but the sink said above`);
    }
    // The point of the bound: far fewer reads than answers (each read is an op call on Deno).
    assert.ok(raw.reads < answers / 2, `seed ${seed}: ${raw.reads} reads for ${answers} answers`);
  }
});

test("DenoSocket: a closed socket takes no frame, and its bound does not grow", () => {
  const raw = new FakeSocket();
  const sink = new DenoSocket(raw);
  raw.readyState = 3;
  assert.equal(sink.send("x".repeat(10_000)), "closed");
  assert.equal(raw.queued, 0);
  assert.equal(sink.above(0), false);
  assert.equal(raw.reads, 0, "a bound of 0 answers without reading");
});
