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
  let bin = "";
  for (const b of new TextEncoder().encode(text)) bin += String.fromCharCode(b);
  return btoa(bin).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

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
