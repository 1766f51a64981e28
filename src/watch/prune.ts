/**
 * Byte-level pruning of one JSON document (one NDJSON watch line, or one page
 * of a paginated list): removes the values at given key paths — with their
 * keys and one adjacent comma — before the bytes are decoded to text, so
 * `JSON.parse` never sees what the consumer never reads (for Flyte apps: a
 * KService's `metadata.managedFields` and `spec`, about half of each watch
 * event and of each list page).
 *
 * Paths: each element is an object key, or {@link EACH} (`"*"`), which stands
 * for every element of an array: `["object", "spec"]` cuts a watch event's
 * object's `spec`; `["items", "*", "spec"]` cuts the `spec` of every item of a
 * list page; `["items", "*"]` would empty the array. A `"*"` only ever matches
 * array elements (an object at that position is kept as it is), so a literal
 * object key `"*"` cannot be named. {@link listPathsOf} turns watch-event
 * paths (`object.X`) into list-page paths (`items.*.X`).
 *
 * How it works: the walker descends, key by key, only into the objects named
 * by the paths (the "shallow" levels); every other value is skipped as a whole
 * by a scanner that only tracks strings (skipping them to the closing quote,
 * honouring `\` escapes) and bracket nesting (`{`/`[` must close with the
 * same kind). The kept byte ranges are then copied into one buffer with
 * `set()` and decoded once.
 *
 * Correctness rules:
 * - a key matches by its decoded value (`"sp\u0065c"` is `spec`), only at its
 *   exact path; keys that merely contain the name, and the same name at other
 *   depths, are kept;
 * - without wildcards, the walk stops as soon as every path has been removed
 *   once; the rest of the line is kept unread (and checked by `JSON.parse`).
 *   So a duplicate key after that point (RFC 8259 advises against them; the
 *   API server never writes them) stays; duplicates met before it are removed
 *   too. With a {@link EACH} path the walk always reads the whole document
 *   (every element has to be visited), and every duplicate is removed;
 * - whenever the walked structure is not valid JSON (a missing `:` or `,`, an
 *   unterminated string, unbalanced or mismatched brackets, trailing bytes,
 *   nesting deeper than {@link MAX_DEPTH}), the input is returned unchanged, so
 *   `JSON.parse` reports the error on the original text;
 * - inside a skipped value the scanner also rejects bytes that JSON never
 *   allows outside strings, and a string followed by anything but `:,}]`;
 *   that catches most damage (a lost quote re-pairs the strings and leaves
 *   bare text). Not checked: the full token grammar inside a *removed* value
 *   (`{"spec":{"a":tru}}` or `{"spec":{"a" "b"}}` lose their broken part
 *   together with `spec`) and raw control characters inside skipped strings —
 *   like any skipping JSON reader, bytes that are removed are never parsed.
 *   Everything that is kept is parsed by `JSON.parse`.
 * @module
 */

import { compile, type Level, numberLeaves, type PrunePaths } from "./prune-paths.ts";

export { EACH, listPathsOf, type PrunePaths } from "./prune-paths.ts";

// ---------------------------------------------------------------------------------------------
// The scanner: skipping values without parsing them. It stays in this module with the walker that
// calls it: across a module boundary V8 does not inline these calls, and the walk cost ~20 % more
// (B1 prune-breakdown on Node, JsonPruner.prune 0.58 → 0.70 of the JSON.parse ceiling). What a scan
// learns about the current line is the caller's (BackslashCursor), not module state.

/** Brackets nested deeper than this inside a skipped value: the line is left as it is. */
export const MAX_DEPTH = 512;
/** Returned when the structure is not valid JSON: the line is left as it is. */
const MALFORMED = -1;

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

/** What may follow a string inside a container (after whitespace): 1 for `:`, `,`, `}`, `]`. */
const AFTER_STRING = new Uint8Array(256);
for (const c of ":,}]") AFTER_STRING[c.charCodeAt(0)] = 1;

/** Bytes that may follow a backslash in a JSON string: `"\/bfnrtu`. */
const ESCAPE = new Uint8Array(256);
for (const c of "\"\\/bfnrtu") ESCAPE[c.charCodeAt(0)] = 1;


/**
 * Where the next backslash is in the line being scanned (-1: none after {@link from}), so a line
 * with long strings and no backslash is searched once. Its owner (one per `JsonPruner`) calls
 * {@link reset} before each line: the same array may hold another line.
 */
class BackslashCursor {
  line: Uint8Array | undefined = undefined;
  next = -1;
  from = 0;

  reset(): void {
    this.line = undefined;
  }
}

/** A bracket stack deep enough for {@link skipContainer}. */
function newBracketStack(): Uint8Array {
  return new Uint8Array(MAX_DEPTH + 1);
}

/** Skips one value at `b[i]`; returns the index after it, or {@link MALFORMED}. */
function skipValue(b: Uint8Array, i: number, stack: Uint8Array, cursor: BackslashCursor): number {
  const c = b[i];
  if (c === QUOTE) return skipStringFrom(b, i + 1, cursor);
  if (c === LBRACE || c === LBRACKET) return skipContainer(b, i, stack, cursor);
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

/**
 * Skips the object or array at `b[i]`: strings skipped (and followed by one
 * of `:,}]`), brackets matched by kind (`}` closes `{`, `]` closes `[`: the
 * closer is the opener + 2), no byte outside strings that JSON never allows
 * there. Returns the index after it, or MALFORMED.
 */
function skipContainer(b: Uint8Array, i: number, stack: Uint8Array, cursor: BackslashCursor): number {
  const n = b.length;
  let d = 0;
  stack[0] = b[i]!;
  let j = i + 1;
  while (j < n) {
    const x = b[j]!;
    const k = CLASS[x]!;
    if (k === 0) {
      j++;
      continue;
    }
    if (k === 1) {
      // Short strings inline (the keys and small values of managedFields and pod specs);
      // escapes and long strings in skipStringFrom.
      const stop = j + 24 < n ? j + 24 : n;
      let y = 0;
      do y = b[++j]!; while (y !== QUOTE && y !== BACKSLASH && j < stop);
      if (y === QUOTE && j < n) j++;
      else {
        j = skipStringFrom(b, j, cursor);
        if (j === MALFORMED) return MALFORMED;
      }
      if (AFTER_STRING[b[j]!] === 0) {
        j = ws(b, j);
        if (AFTER_STRING[b[j]!] === 0) return MALFORMED;
      }
      continue;
    }
    if (k === 2) {
      if (++d > MAX_DEPTH) return MALFORMED;
      stack[d] = x;
    } else if (k === 3) {
      if (stack[d] !== x - 2) return MALFORMED;
      if (d-- === 0) return j + 1;
    } else {
      return MALFORMED;
    }
    j++;
  }
  return MALFORMED;
}

/**
 * Index after the string that `b[j]` is inside (not inside an escape), or {@link MALFORMED} if it never
 * closes or holds an escape JSON does not know (`\\e`, `\\u12`). A string starting with its quote
 * at `i` is `skipStringFrom(b, i + 1, cursor)`.
 */
function skipStringFrom(b: Uint8Array, j: number, cursor: BackslashCursor): number {
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
    if (cursor.line !== b || (cursor.next !== -1 && cursor.next < j) || cursor.from > j) {
      cursor.line = b;
      cursor.from = j;
      cursor.next = b.indexOf(BACKSLASH, j);
    }
    if (cursor.next === -1 || cursor.next > q) return q + 1;
    j = skipEscape(b, cursor.next);
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

/** Index of the first non-whitespace byte at or after `i` (`b.length`: none). */
function ws(b: Uint8Array, i: number): number {
  const n = b.length;
  while (i < n) {
    const x = b[i]!;
    if (x !== SPACE && x !== LF && x !== CR && x !== TAB) return i;
    i++;
  }
  return i;
}

/** Returned inside the walker once every path has been removed: the rest is kept as it is. */
const DONE = -2;

/**
 * Removes the values at fixed key paths from JSON documents given as UTF-8
 * bytes. One instance can be reused for any number of lines (not concurrently
 * reentrant, which JavaScript never is within one call).
 *
 * ```ts
 * const lineBytes = new TextEncoder().encode('{"type":"ADDED","object":{"metadata":{"name":"a"},"spec":{}}}');
 * const pageBytes = new TextEncoder().encode('{"items":[{"metadata":{"name":"a"},"spec":{}}]}');
 * const pruner = new JsonPruner([["object", "metadata", "managedFields"], ["object", "spec"]]);
 * const smaller = pruner.prune(lineBytes); // the same Uint8Array when nothing was removed
 * const pages = new JsonPruner([["items", "*", "metadata", "managedFields"], ["items", "*", "spec"]]);
 * const kept = pages.pruneInPlace(pageBytes); // pageBytes.subarray(0, kept) is the pruned page
 * ```
 */
export class JsonPruner {
  readonly paths: PrunePaths;
  readonly #root: Level;
  /** Removals to find before the walk may stop: the once-per-document leaves, + 1 with a wildcard (never stops). */
  readonly #leaves: number;
  /** Which paths were removed from the current line, and how many are still to find. */
  readonly #found: Uint8Array;
  #remaining = 0;
  /** Removed byte ranges of the current line: start, end, start, end, … in increasing order. */
  #ranges: number[] = [];
  /** The scanner's state for the current line (below): its bracket stack and backslash cursor. */
  readonly #stack = newBracketStack();
  readonly #cursor = new BackslashCursor();
  #scratch: Uint8Array = new Uint8Array(16 * 1024);
  #keyDecoder = new TextDecoder();

  constructor(paths: PrunePaths) {
    this.paths = paths.map((p) => [...p]);
    this.#root = compile(paths);
    const { count, wildcard } = numberLeaves(this.#root);
    this.#leaves = count + (wildcard ? 1 : 0);
    this.#found = new Uint8Array(count);
  }

  /**
   * The document without the pruned values: a new array, or `line` itself when
   * nothing matched or the document is malformed.
   */
  prune(line: Uint8Array): Uint8Array {
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
  pruneToString(line: Uint8Array, decoder: TextDecoder): string {
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
  pruneInPlace(buf: Uint8Array): number {
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
    this.#cursor.reset(); // the same array may hold a different line than last time
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
      const keyEnd = skipStringFrom(b, i + 1, this.#cursor);
      if (keyEnd === MALFORMED) return MALFORMED;
      const match = this.#match(b, keyStart, keyEnd, level);
      i = ws(b, keyEnd);
      if (b[i] !== COLON) return MALFORMED;
      i = ws(b, i + 1);
      const next = match < 0 ? undefined : level.next[match];
      const valueEnd = next ? this.#value(b, i, next) : skipValue(b, i, this.#stack, this.#cursor);
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
    return skipValue(b, i, this.#stack, this.#cursor);
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
      const valueEnd = each === null ? skipValue(b, i, this.#stack, this.#cursor) : this.#value(b, i, each);
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
}

/** Convenience: `new JsonPruner(paths).prune(line)` (compile once and reuse a JsonPruner on hot paths). */
export function pruneJson(line: Uint8Array, paths: PrunePaths): Uint8Array {
  return new JsonPruner(paths).prune(line);
}
