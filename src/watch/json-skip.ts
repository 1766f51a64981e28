/**
 * Skipping JSON values in UTF-8 bytes without parsing them, for `JsonPruner` (prune.ts): a
 * string to its closing quote (escapes checked), an object or array to its matching bracket
 * (strings skipped, brackets matched by kind, bytes JSON never allows outside strings rejected),
 * a scalar to the next delimiter. Each method returns the index after the value, or
 * {@link MALFORMED}. A {@link JsonSkipper} keeps what it learns about the current line (where the
 * next backslash is, the bracket stack), so its owner resets it per line.
 * @module
 */
/** Brackets nested deeper than this inside a skipped value: the line is left as it is. */
export const MAX_DEPTH = 512;
/** Returned when the structure is not valid JSON: the line is left as it is. */
export const MALFORMED = -1;

export const QUOTE = 34; // "
export const BACKSLASH = 92; // \
export const COMMA = 44; // ,
export const COLON = 58; // :
export const LBRACE = 123; // {
export const RBRACE = 125; // }
export const LBRACKET = 91; // [
export const RBRACKET = 93; // ]
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
 * Skips JSON values in one line at a time (not re-entrant; one per `JsonPruner`).
 *
 * @example
 * ```ts
 * import { JsonSkipper } from "./json-skip.ts";
 * const skip = new JsonSkipper();
 * const line = new TextEncoder().encode('{"a":[1,{"b":"x\\"y"}],"c":2}');
 * skip.reset();
 * skip.value(line, 5); // 21: the index after the array that starts at 5 (the "," before "c")
 * ```
 */
export class JsonSkipper {
  readonly #stack = new Uint8Array(MAX_DEPTH + 1);
  /** Position of the next backslash at or after `#nextBackslashFrom` in `#backslashIn` (-1: none), cached per line. */
  #backslashIn: Uint8Array | undefined;
  #nextBackslash = -1;
  #nextBackslashFrom = 0;

  /** Forgets the current line: call it before each new line (the same array may hold another line). */
  reset(): void {
    this.#backslashIn = undefined;
  }

  /** Skips one value at `b[i]`; returns the index after it. */
  value(b: Uint8Array, i: number): number {
    const c = b[i];
    if (c === QUOTE) return this.string(b, i);
    if (c === LBRACE || c === LBRACKET) return this.container(b, i);
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
  container(b: Uint8Array, i: number): number {
    const n = b.length;
    const stack = this.#stack;
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
        // escapes and long strings in string().
        const stop = j + 24 < n ? j + 24 : n;
        let y = 0;
        do y = b[++j]!; while (y !== QUOTE && y !== BACKSLASH && j < stop);
        if (y === QUOTE && j < n) j++;
        else {
          j = this.stringFrom(b, j);
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
   * Index after the string whose opening quote is at `b[i]`, or MALFORMED if
   * it never closes or holds an escape JSON does not know (`\e`, `\u12`).
   */
  string(b: Uint8Array, i: number): number {
    return this.stringFrom(b, i + 1);
  }

  /** {@link JsonSkipper.string} from `j`, a position inside the string that is not inside an escape. */
  stringFrom(b: Uint8Array, j: number): number {
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
      if (this.#backslashIn !== b || (this.#nextBackslash !== -1 && this.#nextBackslash < j) || this.#nextBackslashFrom > j) {
        this.#backslashIn = b;
        this.#nextBackslashFrom = j;
        this.#nextBackslash = b.indexOf(BACKSLASH, j);
      }
      if (this.#nextBackslash === -1 || this.#nextBackslash > q) return q + 1;
      j = skipEscape(b, this.#nextBackslash);
      if (j === MALFORMED) return MALFORMED;
    }
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
export function ws(b: Uint8Array, i: number): number {
  const n = b.length;
  while (i < n) {
    const x = b[i]!;
    if (x !== SPACE && x !== LF && x !== CR && x !== TAB) return i;
    i++;
  }
  return i;
}
