/**
 * The pruner of `src/watch/prune.ts` with its hot loop (`skipContainer`, the
 * skip of every removed or unread object/array) replaced by the WebAssembly
 * SIMD scanner of `assembly/scan.ts`. Everything else — the shallow walk,
 * key matching, the kept-range copy, the malformed-input rules — is a copy of
 * `src/watch/prune.ts` (kept in step by hand; `check.ts` compares the two on
 * the bench data and on tricky inputs). Bench-only: not wired into `src/`.
 * @module
 */
import { JsonPruner, type PrunePaths } from "../../src/watch/prune.ts";
import { compile, type Level, numberLeaves } from "../../src/watch/prune-paths.ts";
import { type ScanWasm, WASM_FALLBACK } from "./wasm.ts";

const QUOTE = 34; // "
const BACKSLASH = 92; // \
const COMMA = 44; // ,
const COLON = 58; // :
const LBRACE = 123; // {
const RBRACE = 125; // }
const LBRACKET = 91; // [
const RBRACKET = 93; // ]
const SPACE = 32;
const TAB = 9;
const LF = 10;
const CR = 13;

/** Returned inside the walker when the structure is not valid JSON: the line is left as it is. */
const MALFORMED = -1;
/** Returned inside the walker once every path has been removed: the rest is kept as it is. */
const DONE = -2;

/**
 * `JsonPruner` with its container skipper in WebAssembly: each document is
 * copied into the module's memory once per call, and every skipped object or
 * array is found by `ScanWasm.skip`. A subclass of `JsonPruner` only so that
 * `ndjsonValues({ prune })` accepts it; every method is overridden.
 */
export class WasmJsonPruner extends JsonPruner {
  readonly #wasm: ScanWasm;
  readonly #root: Level;
  /** Removals to find before the walk may stop: the once-per-document leaves, + 1 with a wildcard (never stops). */
  readonly #leaves: number;
  /** Which paths were removed from the current line, and how many are still to find. */
  readonly #found: Uint8Array;
  #remaining = 0;
  /** Removed byte ranges of the current line: start, end, start, end, … in increasing order. */
  #ranges: number[] = [];
  #scratch: Uint8Array = new Uint8Array(16 * 1024);
  #keyDecoder = new TextDecoder();

  /** The compiled paths and removal counts, for {@link WasmWalkPruner}. */
  protected plan(): { root: Level; leaves: number; found: number } {
    return { root: this.#root, leaves: this.#leaves, found: this.#found.length };
  }

  constructor(paths: PrunePaths, wasm: ScanWasm) {
    super(paths);
    this.#wasm = wasm;
    this.#root = compile(paths);
    const { count, wildcard } = numberLeaves(this.#root);
    this.#leaves = count + (wildcard ? 1 : 0);
    this.#found = new Uint8Array(count);
  }

  /**
   * The document without the pruned values: a new array, or `line` itself when
   * nothing matched or the document is malformed.
   */
  override prune(line: Uint8Array): Uint8Array {
    const kept = this.#walk(line);
    if (kept === line.length) return line;
    const out = new Uint8Array(kept);
    this.#copyKept(line, out);
    return out;
  }

  /**
   * {@link prune} and decode in one step: the kept bytes go through a reused
   * scratch buffer straight into `decoder.decode` (no per-line allocation
   * besides the string).
   */
  override pruneToString(line: Uint8Array, decoder: TextDecoder): string {
    const kept = this.#walk(line);
    if (kept === line.length) return decoder.decode(line);
    if (this.#scratch.length < kept) this.#scratch = new Uint8Array(Math.max(kept, this.#scratch.length * 2));
    this.#copyKept(line, this.#scratch);
    return decoder.decode(this.#scratch.subarray(0, kept));
  }

  /**
   * Prunes `buf` in place (the kept bytes are moved to its front); returns how
   * many bytes are kept: `buf.subarray(0, kept)` is the pruned document
   * (`buf.length`: nothing removed, or malformed — `buf` is unchanged). No
   * allocation: for a buffer the caller owns, e.g. a list page read into one array.
   */
  override pruneInPlace(buf: Uint8Array): number {
    const kept = this.#walk(buf);
    if (kept === buf.length) return kept;
    const r = this.#ranges;
    let from = r[1]!;
    let at = r[0]!;
    for (let k = 2; k < r.length; k += 2) {
      const start = r[k]!;
      buf.copyWithin(at, from, start);
      at += start - from;
      from = r[k + 1]!;
    }
    buf.copyWithin(at, from);
    this.#ranges.length = 0;
    return kept;
  }

  /** Walks the line, filling #ranges; returns the number of bytes kept (line.length: nothing to do). */
  #walk(b: Uint8Array): number {
    this.#ranges.length = 0;
    backslashIn = undefined; // the same array may hold a different line than last time
    this.#wasm.load(b); // the cost of getting the bytes into WASM memory is part of the walk
    const n = b.length;
    let i = ws(b, 0);
    if (i >= n) return n;
    const root = this.#root;
    const first = b[i];
    if (first !== LBRACE && !(first === LBRACKET && root.each !== undefined)) return n;
    this.#found.fill(0);
    this.#remaining = this.#leaves;
    const end = first === LBRACE ? this.#object(b, i, root) : this.#array(b, i, root);
    if (end === MALFORMED || (end !== DONE && ws(b, end) !== n) || this.#ranges.length === 0) {
      this.#ranges.length = 0;
      return n;
    }
    let removed = 0;
    const r = this.#ranges;
    for (let k = 0; k < r.length; k += 2) removed += r[k + 1]! - r[k]!;
    return n - removed;
  }

  #copyKept(src: Uint8Array, dst: Uint8Array): void {
    const r = this.#ranges;
    let from = 0;
    let at = 0;
    for (let k = 0; k < r.length; k += 2) {
      const start = r[k]!;
      if (start > from) {
        dst.set(src.subarray(from, start), at);
        at += start - from;
      }
      from = r[k + 1]!;
    }
    if (from < src.length) dst.set(src.subarray(from), at);
    this.#ranges.length = 0;
  }

  /**
   * Marks path `leaf` as removed; true once every path has been: the walk
   * stops there and the rest of the line is kept unread. So each path is
   * removed at its first occurrence; a later duplicate key (which RFC 8259
   * advises against and the API server never writes) would stay.
   */
  #removed(leaf: number): boolean {
    if (leaf >= 0 && this.#found[leaf] === 0) {
      this.#found[leaf] = 1;
      this.#remaining--;
    }
    return this.#remaining === 0;
  }

  /** Adds [start, end) to the removed ranges; a range that reaches back over earlier ones absorbs them. */
  #remove(start: number, end: number): void {
    const r = this.#ranges;
    while (r.length > 0 && r[r.length - 2]! >= start) r.length -= 2;
    r.push(start, end);
  }

  /** Walks the object at `b[i] === "{"` along `level`; returns the index after its `}`. */
  #object(b: Uint8Array, i: number, level: Level): number {
    i = ws(b, i + 1);
    if (b[i] === RBRACE) return i + 1;
    let lastKeptComma = -1;
    for (;;) {
      if (b[i] !== QUOTE) return MALFORMED;
      const keyStart = i;
      const keyEnd = skipString(b, i);
      if (keyEnd === MALFORMED) return MALFORMED;
      const match = this.#match(b, keyStart, keyEnd, level);
      i = ws(b, keyEnd);
      if (b[i] !== COLON) return MALFORMED;
      i = ws(b, i + 1);
      const next = match < 0 ? undefined : level.next[match];
      const valueEnd = next ? this.#value(b, i, next) : this.#skipValue(b, i);
      if (valueEnd < 0) return valueEnd; // MALFORMED, or DONE deeper down
      const remove = next === null;
      i = ws(b, valueEnd);
      const c = b[i];
      if (c === COMMA) {
        const comma = i;
        i = ws(b, i + 1);
        if (b[i] !== QUOTE) return MALFORMED; // a key must follow (no trailing comma)
        if (!remove) {
          lastKeptComma = comma;
          continue;
        }
        // Not the last member: remove it with the comma after it.
        this.#remove(keyStart, comma + 1);
        if (this.#removed(level.leaf[match]!)) return DONE;
        continue;
      }
      if (c === RBRACE) {
        if (!remove) return i + 1;
        // The last member: remove it with the comma after the last kept member (if any).
        this.#remove(lastKeptComma >= 0 ? lastKeptComma : keyStart, valueEnd);
        return this.#removed(level.leaf[match]!) ? DONE : i + 1;
      }
      return MALFORMED;
    }
  }

  /** Walks (object, array) or skips the value at `b[i]` along `level`; returns the index after it. */
  #value(b: Uint8Array, i: number, level: Level): number {
    const c = b[i];
    if (c === LBRACE && level.keys.length > 0) return this.#object(b, i, level);
    if (c === LBRACKET && level.each !== undefined) return this.#array(b, i, level);
    return this.#skipValue(b, i);
  }

  /**
   * Walks the array at `b[i] === "["`, every element along `level.each`
   * (`null`: every element is removed, each with the comma after it, the last
   * one alone: the array becomes empty); returns the index after its `]`.
   */
  #array(b: Uint8Array, i: number, level: Level): number {
    i = ws(b, i + 1);
    if (b[i] === RBRACKET) return i + 1;
    const each = level.each!;
    for (;;) {
      const start = i;
      const valueEnd = each === null ? this.#skipValue(b, i) : this.#value(b, i, each);
      if (valueEnd < 0) return valueEnd; // MALFORMED (DONE never happens below a wildcard)
      i = ws(b, valueEnd);
      const c = b[i];
      if (c === COMMA) {
        const comma = i;
        i = ws(b, i + 1);
        if (b[i] === RBRACKET) return MALFORMED; // no trailing comma
        if (each === null) this.#remove(start, comma + 1);
        continue;
      }
      if (c === RBRACKET) {
        if (each === null) this.#remove(start, valueEnd);
        return i + 1;
      }
      return MALFORMED;
    }
  }

  /** Index of the key [start, end) (quotes included) in `level`, or -1. */
  #match(b: Uint8Array, start: number, end: number, level: Level): number {
    const len = end - start - 2;
    const keys = level.keys;
    for (let k = 0; k < keys.length; k++) {
      const key = keys[k]!;
      if (key.length !== len) continue;
      let j = 0;
      while (j < len && b[start + 1 + j] === key[j]) j++;
      if (j === len) return k;
    }
    // An escaped key ("sp\u0065c", "a\/b") may still name one of ours: compare its decoded value.
    for (let j = start + 1; j < end - 1; j++) {
      if (b[j] === BACKSLASH) {
        let name: unknown;
        try {
          name = JSON.parse(this.#keyDecoder.decode(b.subarray(start, end)));
        } catch {
          return -1; // a bad escape: JSON.parse will report it (the key itself is always kept)
        }
        return level.names.indexOf(name as string);
      }
    }
    return -1;
  }

  /** Skips one value at `b[i]`; returns the index after it. */
  #skipValue(b: Uint8Array, i: number): number {
    const c = b[i];
    if (c === QUOTE) return skipString(b, i);
    if (c === LBRACE || c === LBRACKET) return this.#wasm.skip(i); // -1 is MALFORMED
    // A scalar (number, true, false, null): up to the next delimiter, made of bytes a scalar may
    // hold (`x`, a lost quote's text, is rejected). Its exact grammar is checked by JSON.parse if kept.
    const n = b.length;
    let j = i;
    while (j < n) {
      const x = b[j]!;
      if (x === COMMA || x === RBRACE || x === RBRACKET || x === SPACE || x === LF || x === CR || x === TAB) break;
      if (CLASS[x] !== 0 || x === COLON) return MALFORMED; // only digits, +-.eE and the letters of true/false/null
      j++;
    }
    return j === i ? MALFORMED : j;
  }
}

/**
 * Byte classes for the container scan: 0 plain (allowed outside strings in
 * JSON: whitespace, `:`, `,`, digits, `+-.eE`, the letters of true/false/null),
 * 1 quote, 2 opening bracket, 3 closing bracket, 4 never valid outside a string.
 */
const CLASS = new Uint8Array(256).fill(4);
for (const c of " \t\r\n:,0123456789+-.eEtruefalsn") CLASS[c.charCodeAt(0)] = 0;
CLASS[QUOTE] = 1;
CLASS[LBRACE] = 2;
CLASS[LBRACKET] = 2;
CLASS[RBRACE] = 3;
CLASS[RBRACKET] = 3;

/** Bytes that may follow a backslash in a JSON string: `"\/bfnrtu`. */
const ESCAPE = new Uint8Array(256);
for (const c of "\"\\/bfnrtu") ESCAPE[c.charCodeAt(0)] = 1;

/** Position of the next backslash at or after `nextBackslashFrom` in `backslashIn` (-1: none), cached per line. */
let backslashIn: Uint8Array | undefined;
let nextBackslash = -1;
let nextBackslashFrom = 0;

/**
 * Index after the string whose opening quote is at `b[i]`, or MALFORMED if
 * it never closes or holds an escape JSON does not know (`\e`, `\u12`).
 */
function skipString(b: Uint8Array, i: number): number {
  return skipStringFrom(b, i + 1);
}

/** {@link skipString} from `j`, a position inside the string that is not inside an escape. */
function skipStringFrom(b: Uint8Array, j: number): number {
  const n = b.length;
  // Short strings (most keys) by a plain loop; long ones (base64, messages) by the native search.
  const stop = j + 32 < n ? j + 32 : n;
  while (j < stop) {
    const x = b[j]!;
    if (x === QUOTE) return j + 1;
    if (x === BACKSLASH) {
      j = skipEscape(b, j);
      if (j === MALFORMED) return MALFORMED;
    } else {
      j++;
    }
  }
  for (;;) {
    const q = b.indexOf(QUOTE, j);
    if (q < 0) return MALFORMED;
    // Escapes before the quote: checked one by one (the next backslash is searched once per
    // line position, so a line with long strings and no backslash is scanned only once).
    if (backslashIn !== b || (nextBackslash !== -1 && nextBackslash < j) || nextBackslashFrom > j) {
      backslashIn = b;
      nextBackslashFrom = j;
      nextBackslash = b.indexOf(BACKSLASH, j);
    }
    if (nextBackslash === -1 || nextBackslash > q) return q + 1;
    j = skipEscape(b, nextBackslash);
    if (j === MALFORMED) return MALFORMED;
  }
}

/** Index after the escape sequence at `b[j] === "\\"`, or MALFORMED. */
function skipEscape(b: Uint8Array, j: number): number {
  const e = b[j + 1];
  if (e === undefined || ESCAPE[e] === 0) return MALFORMED;
  if (e !== 117) return j + 2; // not \u
  for (let h = j + 2; h < j + 6; h++) {
    const x = b[h];
    if (x === undefined || !((x >= 48 && x <= 57) || ((x | 32) >= 97 && (x | 32) <= 102))) return MALFORMED;
  }
  return j + 6;
}

function ws(b: Uint8Array, i: number): number {
  const n = b.length;
  while (i < n) {
    const x = b[i]!;
    if (x !== SPACE && x !== LF && x !== CR && x !== TAB) return i;
    i++;
  }
  return i;
}


/** Writes the compiled paths into the module's paths area; returns the root level's address. */
function writeLevel(level: Level, wasm: ScanWasm): number {
  const words = 3 + 5 * level.keys.length;
  const at = wasm.alloc(words * 4);
  const w: number[] = [level.keys.length, level.each === undefined ? 0 : level.each === null ? 1 : 2, 0];
  if (level.each) w[2] = writeLevel(level.each, wasm);
  for (let k = 0; k < level.keys.length; k++) {
    const key = level.keys[k]!;
    const keyAt = wasm.alloc(key.length);
    wasm.bytes().set(key, keyAt);
    const next = level.next[k];
    w.push(keyAt, key.length, next === null || next === undefined ? 0 : 1, next ? writeLevel(next, wasm) : 0, level.leaf[k]!);
  }
  new Int32Array(wasm.bytes().buffer, at, words).set(w);
  return at;
}

/**
 * The whole walk in WebAssembly (`prune` in `assembly/scan.ts`, an exact port of the
 * JsonPruner walk): JavaScript only copies the line in and decodes the kept bytes straight out
 * of the module's memory. A shallow key with an escape that does not match byte for byte (which
 * JsonPruner decodes with JSON.parse) makes it run {@link WasmJsonPruner}'s walk instead.
 * `pruneInPlace` is {@link WasmJsonPruner}'s.
 */
export class WasmWalkPruner extends WasmJsonPruner {
  readonly #wasm: ScanWasm;
  readonly #root: number;
  readonly #leaves: number;
  readonly #found: number;
  readonly #nFound: number;

  constructor(paths: PrunePaths, wasm: ScanWasm) {
    super(paths, wasm);
    this.#wasm = wasm;
    const plan = this.plan();
    this.#root = writeLevel(plan.root, wasm);
    this.#leaves = plan.leaves;
    this.#nFound = plan.found;
    this.#found = wasm.alloc(Math.max(1, plan.found));
  }

  override prune(line: Uint8Array): Uint8Array {
    const kept = this.#wasm.prune(this.#root, this.#leaves, this.#found, this.#nFound, line);
    if (kept === WASM_FALLBACK) return super.prune(line);
    if (kept === line.length) return line;
    const out = this.#wasm.out;
    return this.#wasm.bytes().slice(out, out + kept);
  }

  override pruneToString(line: Uint8Array, decoder: TextDecoder): string {
    const kept = this.#wasm.prune(this.#root, this.#leaves, this.#found, this.#nFound, line);
    if (kept === WASM_FALLBACK) return super.pruneToString(line, decoder);
    if (kept === line.length) return decoder.decode(line);
    const out = this.#wasm.out;
    return decoder.decode(this.#wasm.bytes().subarray(out, out + kept));
  }
}
