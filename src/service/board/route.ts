/**
 * Serves the live app board (docs/board.md): `GET /` (the page),
 * `GET /board/app.js` and `GET /board/app.css`. The assets are string
 * constants, so no runtime reads a file: the HTML and CSS from ./page.ts,
 * the script (./client.js) from ./client.gen.ts. Each has a content hash
 * used as its ETag and in the page's asset URLs (`?v=<hash>`), so a
 * versioned asset is cached for a year and the page itself is always
 * revalidated (`no-cache` + ETag → 304).
 * Every response carries a strict Content-Security-Policy: only the page's
 * own script and stylesheet, and connections to its own origin (which
 * includes ws:/wss: to the same host under CSP Level 3).
 * @module
 */
import type { Context, Hono } from "hono";
import { BOARD_JS } from "./client.gen.ts";
import { BOARD_CSS, BOARD_HTML_TEMPLATE } from "./page.ts";

/** FNV-1a (32-bit) of a string's UTF-16 code units, as 8 hex digits: enough to tell versions apart. */
export function contentHash(text: string): string {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return (h >>> 0).toString(16).padStart(8, "0");
}

/** The Content-Security-Policy of every board response. */
export const BOARD_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join("; ");

interface Asset {
  body: string;
  type: string;
  etag: string;
  hash: string;
}

function asset(body: string, type: string): Asset {
  const hash = contentHash(body);
  return { body, type, hash, etag: `"${hash}-${body.length.toString(36)}"` };
}

const CSS = asset(BOARD_CSS, "text/css; charset=utf-8");
const JS = asset(BOARD_JS, "text/javascript; charset=utf-8");
// Relative URLs: the page also works behind a proxy that mounts appwatch under a path prefix.
const HTML = asset(
  BOARD_HTML_TEMPLATE.replace("{{CSS}}", `board/app.css?v=${CSS.hash}`).replace("{{JS}}", `board/app.js?v=${JS.hash}`),
  "text/html; charset=utf-8",
);

/** The versioned asset URLs the page references (for tests). */
export const BOARD_ASSETS = { css: `/board/app.css?v=${CSS.hash}`, js: `/board/app.js?v=${JS.hash}` } as const;

function matchesEtag(header: string | undefined, etag: string): boolean {
  if (!header) return false;
  if (header.trim() === "*") return true;
  return header.split(",").some((t) => t.trim().replace(/^W\//, "") === etag);
}

function serve(c: Context, a: Asset, immutable: boolean): Response {
  const headers: Record<string, string> = {
    "content-type": a.type,
    "etag": a.etag,
    "cache-control": immutable ? "public, max-age=31536000, immutable" : "no-cache",
    "content-security-policy": BOARD_CSP,
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
    "x-frame-options": "DENY",
  };
  if (matchesEtag(c.req.header("if-none-match"), a.etag)) return new Response(null, { status: 304, headers });
  return new Response(a.body, { status: 200, headers });
}

/** Mounts the board's routes on `app` (`/`, `/board/app.js`, `/board/app.css`). */
export function mountBoard(app: Hono): void {
  app.get("/", (c) => serve(c, HTML, false));
  app.get("/board/app.js", (c) => serve(c, JS, c.req.query("v") === JS.hash));
  app.get("/board/app.css", (c) => serve(c, CSS, c.req.query("v") === CSS.hash));
}
