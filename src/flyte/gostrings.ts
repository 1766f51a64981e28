/**
 * Go's string semantics where Flyte's output depends on them: `strings.ToLower` (KService names,
 * hosts) and `%q` (error texts). JavaScript's `toLowerCase` and `JSON.stringify` differ from both.
 * @module
 */

/**
 * Go's `strings.ToLower`: rune by rune with Unicode's simple case mapping (`unicode.ToLower`), so
 * `İ` (U+0130) becomes `i` and `Σ` is always `σ` — where JavaScript's `toLowerCase` applies the full
 * mapping (`i̇`, two code points) and the final-sigma rule (`ς`).
 *
 * @example
 * ```ts
 * goToLower("İSTANBUL-ΑΣ"); // "istanbul-ασ"
 * ```
 */
export function goToLower(s: string): string {
  let ascii = true;
  for (let i = 0; i < s.length; i++) {
    if (s.charCodeAt(i) >= 0x80) {
      ascii = false;
      break;
    }
  }
  if (ascii) return s.toLowerCase();
  let out = "";
  for (const ch of s) {
    // U+0130 is the one code point whose full lowercase mapping differs from its simple one
    // unconditionally; per code point, toLowerCase never applies the final-sigma context.
    out += ch === "\u0130" ? "i" : isLoneSurrogate(ch) ? "\uFFFD" : ch.toLowerCase();
  }
  return out;
}

function isLoneSurrogate(ch: string): boolean {
  const c = ch.charCodeAt(0);
  return ch.length === 1 && c >= 0xd800 && c <= 0xdfff;
}

// Go's unicode.IsPrint: letters, marks, numbers, punctuation, symbols, and the ASCII space.
const PRINTABLE = /^[\p{L}\p{M}\p{N}\p{P}\p{S} ]$/u;

/**
 * Go's `%q` (`strconv.Quote`): `"` and `\` escaped, `\a \b \f \n \r \t \v`, other controls as `\xNN`,
 * every other rune Go does not consider printable (NBSP, U+0085, U+200B, U+2028, U+FEFF, …) as
 * `\uNNNN` or `\UNNNNNNNN`.
 *
 * @example
 * ```ts
 * goQuote("a\u00a0b"); // "\"a\\u00a0b\""
 * ```
 */
export function goQuote(s: string): string {
  let out = '"';
  for (const ch of s) {
    const c = ch.codePointAt(0)!;
    if (ch === '"') out += '\\"';
    else if (ch === "\\") out += "\\\\";
    else if (c >= 0x20 && c < 0x7f) out += ch;
    else if (ch === "\x07") out += "\\a";
    else if (ch === "\b") out += "\\b";
    else if (ch === "\f") out += "\\f";
    else if (ch === "\n") out += "\\n";
    else if (ch === "\r") out += "\\r";
    else if (ch === "\t") out += "\\t";
    else if (ch === "\v") out += "\\v";
    else if (c < 0x20 || c === 0x7f) out += `\\x${c.toString(16).padStart(2, "0")}`;
    else if (isLoneSurrogate(ch)) out += "\uFFFD"; // Go decoded it as U+FFFD, which is printable
    else if (PRINTABLE.test(ch)) out += ch;
    else if (c < 0x10000) out += `\\u${c.toString(16).padStart(4, "0")}`;
    else out += `\\U${c.toString(16).padStart(8, "0")}`;
  }
  return out + '"';
}
