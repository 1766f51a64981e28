/**
 * The pure-TypeScript SHA-256 (`src/flyte/sha256.ts`, used for Flyte's KService-name hash) against
 * `node:crypto` as the oracle: every length from 0 to 300 bytes (the padding's block boundaries at
 * 55/56/64, 119/120/128, …), random longer inputs, and strings with non-ASCII text and lone
 * surrogates through `KServiceName`'s own UTF-8 path (TextEncoder, which Node's `update(s, "utf8")` matches).
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { sha256, sha256Hex } from "../src/flyte/sha256.ts";
import { KServiceName } from "../src/flyte/naming.ts";
import { seededRandom } from "../src/prng.ts";

const oracle = (data: Uint8Array | string): string => createHash("sha256").update(data).digest("hex");

function randomBytes(rand: () => number, n: number): Uint8Array {
  const out = new Uint8Array(n);
  for (let i = 0; i < n; i++) out[i] = Math.floor(rand() * 256);
  return out;
}

test("sha256: FIPS 180-4 examples", () => {
  const enc = new TextEncoder();
  assert.equal(sha256Hex(new Uint8Array(0)), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  assert.equal(sha256Hex(enc.encode("abc")), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  assert.equal(
    sha256Hex(enc.encode("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq")),
    "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1",
  );
  assert.equal(sha256(enc.encode("abc")).length, 32);
});

test("sha256: every length 0..300 (block boundaries) matches node:crypto", () => {
  const rand = seededRandom(15);
  for (let n = 0; n <= 300; n++) {
    const data = randomBytes(rand, n);
    assert.equal(sha256Hex(data), oracle(data), `length ${n}`);
  }
});

test("sha256: 500 random inputs up to 5,000 bytes, and a subarray view, match node:crypto", () => {
  const rand = seededRandom(20261202);
  for (let i = 0; i < 500; i++) {
    const data = randomBytes(rand, Math.floor(rand() * 5000));
    assert.equal(sha256Hex(data), oracle(data), `input ${i} (${data.length} bytes)`);
  }
  // A view into a larger buffer: only its own bytes count.
  const big = randomBytes(rand, 1000);
  const view = big.subarray(100, 357);
  assert.equal(sha256Hex(view), oracle(Uint8Array.from(view)));
});

test("sha256: non-ASCII strings (and lone surrogates) via TextEncoder match node:crypto's utf8", () => {
  const rand = seededRandom(7);
  const alphabet = ["a", "Z", "-", "/", "é", "ß", "İ", "K", "Ω", "漢", "😀", "\u{10FFFF}", "\uD800", "\uDC00", "\u0000", "\uFEFF"];
  const enc = new TextEncoder();
  for (let i = 0; i < 400; i++) {
    let s = "";
    const n = Math.floor(rand() * 90);
    for (let j = 0; j < n; j++) s += alphabet[Math.floor(rand() * alphabet.length)];
    assert.equal(sha256Hex(enc.encode(s)), oracle(s), `string ${JSON.stringify(s)}`);
  }
});

test("KServiceName: the hashed form equals the node:crypto answer for long and non-ASCII names", () => {
  const rand = seededRandom(63);
  const parts = ["app", "llm", "production", "é", "漢字", "😀", "x".repeat(40)];
  for (let i = 0; i < 300; i++) {
    const pick = () => Array.from({ length: 1 + Math.floor(rand() * 4) }, () => parts[Math.floor(rand() * parts.length)]).join("");
    const id = { project: pick(), domain: pick(), name: pick() };
    const got = KServiceName(id);
    const raw = `${id.name}-${id.project}-${id.domain}`.toLowerCase();
    if (new TextEncoder().encode(raw).length <= 63) continue;
    assert.equal(got.slice(-9), `-${oracle(`${id.project}/${id.domain}/${id.name}`).slice(0, 8)}`, JSON.stringify(id));
  }
});
