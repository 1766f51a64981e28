// AssemblyScript (compiled to WebAssembly by `bench/wasm-scan/build.ts`; not TypeScript: excluded
// from tsconfig.json). The container skipper of `src/watch/prune.ts` (`skipContainer`) with the
// same result on every input, 64 bytes at a time with WASM SIMD where a block is "plain".
//
// skip(start, end): the object or array at memory[start] (`{` or `[`), bytes up to `end`
// (exclusive); returns the address after its closing bracket, or -1 (MALFORMED) in exactly the
// cases where `skipContainer` returns MALFORMED.
//
// A 64-byte block is plain when it holds no backslash, no byte that JSON never allows outside a
// string is outside a string, and every string that closes in it is followed at once by one of
// `:,}]`. Then the block is done by bitmasks (simdjson's stage 1, reduced): quotes, in-string
// mask by prefix XOR, brackets outside strings matched by kind against the stack. Any other
// block is walked by the exact scalar port of `skipContainer` until the next block start outside
// a string; so escapes, whitespace after strings and malformed bytes all take the scalar path.

const MAX_DEPTH: i32 = 512;
const STACK: usize = memory.data(MAX_DEPTH + 16);
/** 0 plain, 1 quote, 2 opening bracket, 3 closing bracket, 4 never valid outside a string. */
const CLASS: usize = memory.data(256);
/** 1 for `:`, `,`, `}`, `]`. */
const AFTER: usize = memory.data(256);
/** 1 for the bytes that may follow a backslash: `"\/bfnrtu`. */
const ESC: usize = memory.data(256);
/** 1 for hex digits. */
const HEX: usize = memory.data(256);

function setAll(table: usize, codes: string, v: u8): void {
  for (let i = 0; i < codes.length; i++) store<u8>(table + <usize>codes.charCodeAt(i), v);
}
memory.fill(CLASS, 4, 256);
setAll(CLASS, " \t\r\n:,0123456789+-.eEtruefalsn", 0);
setAll(CLASS, "\"", 1);
setAll(CLASS, "{[", 2);
setAll(CLASS, "}]", 3);
setAll(AFTER, ":,}]", 1);
setAll(ESC, "\"\\/bfnrtu", 1);
setAll(HEX, "0123456789abcdefABCDEF", 1);

// Nibble tables for "allowed outside a string" (CLASS != 4): one bit per high nibble group
// (0x0_: \t\n\r, 0x2_: space " + , - ., 0x3_: digits :, 0x4_: E, 0x5_: [ ], 0x6_: a e f l n,
// 0x7_: r s t u { }); a byte is allowed iff LO[low] & HI[high] != 0.
const LO_T = i8x16(6, 36, 70, 68, 68, 108, 36, 4, 4, 5, 5, 82, 34, 83, 34, 0);
const HI_T = i8x16(1, 0, 2, 4, 8, 16, 32, 64, 0, 0, 0, 0, 0, 0, 0, 0);

const MALFORMED: i32 = -1;

/** Address after the string whose body starts at `j` (not inside an escape), or -1. */
function stringFrom(j: usize, n: usize): isize {
  const quote = i8x16.splat(0x22);
  const bs = i8x16.splat(0x5c);
  for (;;) {
    while (j + 16 <= n) {
      const v = v128.load(j);
      const m = i8x16.bitmask(v128.or(i8x16.eq(v, quote), i8x16.eq(v, bs)));
      if (m != 0) {
        j += <usize>ctz<i32>(m);
        break;
      }
      j += 16;
    }
    if (j >= n) return MALFORMED;
    const x = load<u8>(j);
    if (x == 0x22) return <isize>(j + 1);
    if (x == 0x5c) {
      if (j + 1 >= n) return MALFORMED;
      const e = load<u8>(j + 1);
      if (load<u8>(ESC + <usize>e) == 0) return MALFORMED;
      if (e != 0x75) {
        j += 2;
      } else {
        if (j + 6 > n) return MALFORMED;
        for (let h: usize = 2; h < 6; h++) if (load<u8>(HEX + <usize>load<u8>(j + h)) == 0) return MALFORMED;
        j += 6;
      }
      continue;
    }
    j++;
  }
  return MALFORMED; // not reached
}

/** After a string ending before `j`: whitespace, then one of `:,}]` must follow; -1 if not. */
@inline
function afterString(j: usize, n: usize): isize {
  if (j < n && load<u8>(AFTER + <usize>load<u8>(j)) == 0) {
    while (j < n) {
      const x = load<u8>(j);
      if (x != 0x20 && x != 0x0a && x != 0x0d && x != 0x09) break;
      j++;
    }
    if (j < n && load<u8>(AFTER + <usize>load<u8>(j)) == 0) return MALFORMED;
  }
  return <isize>j;
}

@inline
function mask16(v: v128, c: i8): u64 {
  return <u64>(<u32>i8x16.bitmask(i8x16.eq(v, i8x16.splat(c))));
}

/** Bytes of `v` that are never valid outside a string, as a 16-bit mask. */
@inline
function badMask(v: v128): u64 {
  const lo = v128.and(v, i8x16.splat(0x0f));
  const hi = i8x16.shr_u(v, 4);
  const a = v128.and(i8x16.swizzle(LO_T, lo), i8x16.swizzle(HI_T, hi));
  return <u64>(<u32>i8x16.bitmask(i8x16.eq(a, i8x16.splat(0))));
}

/** Counters of the last call (bench diagnostics): blocks done by SIMD, scalar fallbacks. */
let simdBlocks: u32 = 0;
let scalarRuns: u32 = 0;
export function simdBlockCount(): u32 { return simdBlocks; }
export function scalarRunCount(): u32 { return scalarRuns; }
export function resetCounts(): void { simdBlocks = 0; scalarRuns = 0; }

/** Where callers may put their bytes (after this module's static data, 64-byte aligned). */
export function dataStart(): usize {
  return (__heap_base + 63) & ~<usize>63;
}

export function skip(start: usize, n: usize): isize {
  let d: i32 = 0;
  store<u8>(STACK, load<u8>(start));
  let j: usize = start + 1;
  let inString = false;
  for (;;) {
    // ---- SIMD blocks
    while (j + 64 <= n) {
      const v0 = v128.load(j);
      const v1 = v128.load(j, 16);
      const v2 = v128.load(j, 32);
      const v3 = v128.load(j, 48);
      const bs = mask16(v0, 0x5c) | (mask16(v1, 0x5c) << 16) | (mask16(v2, 0x5c) << 32) | (mask16(v3, 0x5c) << 48);
      if (bs != 0) break;
      const q = mask16(v0, 0x22) | (mask16(v1, 0x22) << 16) | (mask16(v2, 0x22) << 32) | (mask16(v3, 0x22) << 48);
      let s = q;
      s ^= s << 1;
      s ^= s << 2;
      s ^= s << 4;
      s ^= s << 8;
      s ^= s << 16;
      s ^= s << 32;
      if (inString) s = ~s; // s: inside a string (opening quote included, closing quote excluded)
      const out = ~s;
      const bad = badMask(v0) | (badMask(v1) << 16) | (badMask(v2) << 32) | (badMask(v3) << 48);
      if ((bad & out) != 0) break;
      const closeQ = q & out;
      const w0 = v128.or(v0, i8x16.splat(0x20));
      const w1 = v128.or(v1, i8x16.splat(0x20));
      const w2 = v128.or(v2, i8x16.splat(0x20));
      const w3 = v128.or(v3, i8x16.splat(0x20));
      const close = mask16(w0, 0x7d) | (mask16(w1, 0x7d) << 16) | (mask16(w2, 0x7d) << 32) | (mask16(w3, 0x7d) << 48);
      if (closeQ != 0) {
        const follow = close |
          mask16(v0, 0x3a) | (mask16(v1, 0x3a) << 16) | (mask16(v2, 0x3a) << 32) | (mask16(v3, 0x3a) << 48) |
          mask16(v0, 0x2c) | (mask16(v1, 0x2c) << 16) | (mask16(v2, 0x2c) << 32) | (mask16(v3, 0x2c) << 48);
        if (((closeQ << 1) & ~follow) != 0) break;
        if ((closeQ >> 63) != 0 && (j + 64 >= n || load<u8>(AFTER + <usize>load<u8>(j + 64)) == 0)) break;
      }
      const open = mask16(w0, 0x7b) | (mask16(w1, 0x7b) << 16) | (mask16(w2, 0x7b) << 32) | (mask16(w3, 0x7b) << 48);
      let br = (open | close) & out;
      while (br != 0) {
        const p = <usize>ctz<u64>(br);
        br &= br - 1;
        const x = load<u8>(j + p);
        if ((x & 2) != 0) {
          if (++d > MAX_DEPTH) return MALFORMED;
          store<u8>(STACK + <usize>d, x);
        } else {
          if (<u32>load<u8>(STACK + <usize>d) != <u32>x - 2) return MALFORMED;
          if (d-- == 0) return <isize>(j + p + 1);
        }
      }
      inString = (s >> 63) != 0;
      j += 64;
      simdBlocks++;
    }
    // ---- scalar (exact port of skipContainer) up to the next block start outside a string
    scalarRuns++;
    const limit = j + 64;
    if (inString) {
      const e = stringFrom(j, n);
      if (e < 0) return MALFORMED;
      const a = afterString(<usize>e, n);
      if (a < 0) return MALFORMED;
      j = <usize>a;
      inString = false;
    }
    for (;;) {
      if (j >= n) return MALFORMED;
      if (j >= limit && j + 64 <= n) break;
      const x = load<u8>(j);
      const k = load<u8>(CLASS + <usize>x);
      if (k == 0) {
        j++;
        continue;
      }
      if (k == 1) {
        const e = stringFrom(j + 1, n);
        if (e < 0) return MALFORMED;
        const a = afterString(<usize>e, n);
        if (a < 0) return MALFORMED;
        j = <usize>a;
        continue;
      }
      if (k == 2) {
        if (++d > MAX_DEPTH) return MALFORMED;
        store<u8>(STACK + <usize>d, x);
      } else if (k == 3) {
        if (<u32>load<u8>(STACK + <usize>d) != <u32>x - 2) return MALFORMED;
        if (d-- == 0) return <isize>(j + 1);
      } else {
        return MALFORMED;
      }
      j++;
    }
  }
  return MALFORMED; // not reached
}

// ---------------------------------------------------------------- the whole walk in WASM
//
// An exact port of JsonPruner's walk (`#walk`, `#object`, `#array`, `#value`, `#match`,
// `#skipValue`, `#remove`, `#removed` in src/watch/prune.ts) over compiled paths that JavaScript
// writes into memory (see `wasm.ts`: level records of i32 words: keys, nextKind, nextPtr, leaf,
// eachKind, eachPtr). The one case it does not handle is a key with a backslash that does not
// match byte for byte (JsonPruner decodes it with JSON.parse): the walk returns FALLBACK and the
// caller runs the JavaScript walk instead. Kept bytes are copied to `out`.

const DONE: isize = -2;
const FALLBACK: isize = -3;

let gEnd: usize = 0; // end of the line
let gRanges: usize = 0; // removed ranges (i32 start, end) relative to nothing: absolute addresses
let gNr: i32 = 0; // i32 words used in gRanges
let gFound: usize = 0;
let gRemaining: i32 = 0;

@inline
function at(i: usize): i32 {
  return i < gEnd ? <i32>load<u8>(i) : -1;
}

function wsAt(i: usize): usize {
  while (i < gEnd) {
    const x = load<u8>(i);
    if (x != 0x20 && x != 0x0a && x != 0x0d && x != 0x09) return i;
    i++;
  }
  return i;
}

function removeRange(start: usize, end: usize): void {
  while (gNr > 0 && <usize>load<u32>(gRanges + (<usize>(gNr - 2) << 2)) >= start) gNr -= 2;
  store<u32>(gRanges + (<usize>gNr << 2), <u32>start);
  store<u32>(gRanges + (<usize>(gNr + 1) << 2), <u32>end);
  gNr += 2;
}

function removedLeaf(leaf: i32): bool {
  if (leaf >= 0 && load<u8>(gFound + <usize>leaf) == 0) {
    store<u8>(gFound + <usize>leaf, 1);
    gRemaining--;
  }
  return gRemaining == 0;
}

// level record: [0] nkeys, [1] eachKind (0 none, 1 remove every element, 2 walk each), [2] eachPtr,
// then per key 5 words: keyPtr, keyLen, nextKind (0 remove, 1 walk), nextPtr, leaf.
@inline function lw(level: usize, k: usize): i32 { return load<i32>(level + (k << 2)); }

/** Index of the key [start, end) (quotes included) in `level`, -1, or FALLBACK (an escaped key). */
function matchKey(start: usize, end: usize, level: usize): i32 {
  const len = <i32>(end - start) - 2;
  const nk = lw(level, 0);
  for (let k = 0; k < nk; k++) {
    const base = 3 + <usize>k * 5;
    if (lw(level, base + 1) != len) continue;
    const key = <usize>lw(level, base);
    let j = 0;
    while (j < len && load<u8>(start + 1 + <usize>j) == load<u8>(key + <usize>j)) j++;
    if (j == len) return k;
  }
  for (let j = start + 1; j < end - 1; j++) if (load<u8>(j) == 0x5c) return <i32>FALLBACK;
  return -1;
}

function skipValueAt(i: usize): isize {
  const c = at(i);
  if (c == 0x22) return stringFrom(i + 1, gEnd);
  if (c == 0x7b || c == 0x5b) return skip(i, gEnd);
  let j = i;
  while (j < gEnd) {
    const x = load<u8>(j);
    if (x == 0x2c || x == 0x7d || x == 0x5d || x == 0x20 || x == 0x0a || x == 0x0d || x == 0x09) break;
    if (load<u8>(CLASS + <usize>x) != 0 || x == 0x3a) return MALFORMED;
    j++;
  }
  return j == i ? MALFORMED : <isize>j;
}

function valueAt(i: usize, level: usize): isize {
  const c = at(i);
  if (c == 0x7b && lw(level, 0) > 0) return objectAt(i, level);
  if (c == 0x5b && lw(level, 1) != 0) return arrayAt(i, level);
  return skipValueAt(i);
}

function objectAt(i0: usize, level: usize): isize {
  let i = wsAt(i0 + 1);
  if (at(i) == 0x7d) return <isize>(i + 1);
  let lastKeptComma: isize = -1;
  for (;;) {
    if (at(i) != 0x22) return MALFORMED;
    const keyStart = i;
    const ke = stringFrom(i + 1, gEnd);
    if (ke < 0) return MALFORMED;
    const keyEnd = <usize>ke;
    const match = matchKey(keyStart, keyEnd, level);
    if (match == <i32>FALLBACK) return FALLBACK;
    i = wsAt(keyEnd);
    if (at(i) != 0x3a) return MALFORMED;
    i = wsAt(i + 1);
    // next: -1 none (skip), 0 remove (skip), 1 walk
    const base = 3 + <usize>match * 5;
    const nextKind = match < 0 ? -1 : lw(level, base + 2);
    const valueEnd = nextKind == 1 ? valueAt(i, <usize>lw(level, base + 3)) : skipValueAt(i);
    if (valueEnd < 0) return valueEnd;
    const remove = nextKind == 0;
    i = wsAt(<usize>valueEnd);
    const c = at(i);
    if (c == 0x2c) {
      const comma = i;
      i = wsAt(i + 1);
      if (at(i) != 0x22) return MALFORMED;
      if (!remove) {
        lastKeptComma = <isize>comma;
        continue;
      }
      removeRange(keyStart, comma + 1);
      if (removedLeaf(lw(level, base + 4))) return DONE;
      continue;
    }
    if (c == 0x7d) {
      if (!remove) return <isize>(i + 1);
      removeRange(lastKeptComma >= 0 ? <usize>lastKeptComma : keyStart, <usize>valueEnd);
      return removedLeaf(lw(level, base + 4)) ? DONE : <isize>(i + 1);
    }
    return MALFORMED;
  }
  return MALFORMED; // not reached
}

function arrayAt(i0: usize, level: usize): isize {
  let i = wsAt(i0 + 1);
  if (at(i) == 0x5d) return <isize>(i + 1);
  const eachKind = lw(level, 1);
  const each = <usize>lw(level, 2);
  for (;;) {
    const start = i;
    const valueEnd = eachKind == 1 ? skipValueAt(i) : valueAt(i, each);
    if (valueEnd < 0) return valueEnd;
    i = wsAt(<usize>valueEnd);
    const c = at(i);
    if (c == 0x2c) {
      const comma = i;
      i = wsAt(i + 1);
      if (at(i) == 0x5d) return MALFORMED;
      if (eachKind == 1) removeRange(start, comma + 1);
      continue;
    }
    if (c == 0x5d) {
      if (eachKind == 1) removeRange(start, <usize>valueEnd);
      return <isize>(i + 1);
    }
    return MALFORMED;
  }
  return MALFORMED; // not reached
}

/**
 * Prunes the line [start, start + n) along the level at `root` (`leaves`: removals to find
 * before stopping, `found`: one byte per once-per-document leaf); writes the kept bytes to
 * `out` and returns their count (n: nothing removed or malformed, nothing written), or -3
 * (FALLBACK: run the JavaScript walk). `ranges` needs room for 2 words per removed range.
 */
export function prune(root: usize, leaves: i32, found: usize, nFound: i32, start: usize, n: i32, out: usize, ranges: usize): i32 {
  gEnd = start + <usize>n;
  gRanges = ranges;
  gNr = 0;
  let i = wsAt(start);
  if (i >= gEnd) return n;
  const first = load<u8>(i);
  if (first != 0x7b && !(first == 0x5b && lw(root, 1) != 0)) return n;
  memory.fill(found, 0, <usize>nFound);
  gFound = found;
  gRemaining = leaves;
  const end = first == 0x7b ? objectAt(i, root) : arrayAt(i, root);
  if (end == FALLBACK) return <i32>FALLBACK;
  if (end == MALFORMED || (end != DONE && wsAt(<usize>end) != gEnd) || gNr == 0) return n;
  // copy the kept bytes
  let from = start;
  let o = out;
  for (let k = 0; k < gNr; k += 2) {
    const s = <usize>load<u32>(ranges + (<usize>k << 2));
    if (s > from) {
      memory.copy(o, from, s - from);
      o += s - from;
    }
    from = <usize>load<u32>(ranges + (<usize>(k + 1) << 2));
  }
  if (from < gEnd) {
    memory.copy(o, from, gEnd - from);
    o += gEnd - from;
  }
  return <i32>(o - out);
}
