/**
 * Unpadded base64url (RFC 4648 §5) of UTF-8 text: the form of every opaque token appwatch and its
 * sandbox issue (resume tokens, page tokens, the sandbox's continue tokens).
 * @module
 */

/**
 * `text` as UTF-8, base64url-encoded without padding.
 *
 * @example
 * ```ts
 * import { textToBase64Url } from "./base64url.ts";
 * textToBase64Url('{"v":1}'); // "eyJ2IjoxfQ"
 * ```
 */
export function textToBase64Url(text: string): string {
  // ASCII text is its own UTF-8 "binary string" (every resume token is, unless a cluster's name is
  // not): `btoa` takes it as it is, with no byte loop. A token is made per published change.
  let bin = text;
  if (!ASCII.test(text)) {
    bin = "";
    for (const b of encoder.encode(text)) bin += String.fromCharCode(b);
  }
  return btoa(bin).replace(BASE64_ONLY, toUrlAlphabet);
}

const ASCII = /^[\x00-\x7f]*$/;
const encoder = new TextEncoder();
const BASE64_ONLY = /[+/=]/g;
const toUrlAlphabet = (c: string): string => c === "+" ? "-" : c === "/" ? "_" : "";

/** The text {@link textToBase64Url} made; `undefined` for anything else (other alphabets, padding, bad UTF-8). */
export function base64UrlToText(token: string): string | undefined {
  if (!/^[A-Za-z0-9_-]*$/.test(token) || token.length % 4 === 1) return undefined;
  try {
    const bin = atob(token.replace(/-/g, "+").replace(/_/g, "/"));
    return new TextDecoder("utf-8", { fatal: true }).decode(Uint8Array.from(bin, (c) => c.charCodeAt(0)));
  } catch {
    return undefined;
  }
}
