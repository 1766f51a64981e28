/**
 * Continue tokens: opaque base64url JSON like etcd3's (`{"v":"meta.k8s.io/v1","rv":…,"start":…}`)
 * plus an issue time and sequence number so the sandbox can expire them on demand.
 * `rv: -1` is the "inconsistent continuation" offered in a 410 (continue at the latest state).
 * @module
 */
import { base64UrlToText, textToBase64Url } from "../base64url.ts";
import { type Clock, realClock } from "../watch/clock.ts";
import { badRequest } from "./errors.ts";

/** A decoded continue token. */
export interface ContinueToken {
  /** Snapshot RV of the list, or -1 for "latest" (inconsistent continuation). */
  rv: number;
  /** Resume at the first key ≥ start (the last returned key + "\u0000"). */
  start: string;
  /** Issue time, ms of the sandbox's clock (since the epoch on the real clock). */
  iat: number;
  /** Issue sequence, for {@link ContinueTokens.expireAll}. */
  seq: number;
}

const VERSION = "meta.k8s.io/v1";

/** Issues, decodes and expires continue tokens. */
export class ContinueTokens {
  #seq = 0;
  #expiredThrough = 0;
  readonly #ttlMs: number;
  readonly #clock: Clock;

  constructor(ttlMs: number, clock: Clock = realClock) {
    this.#ttlMs = ttlMs;
    this.#clock = clock;
  }

  /** A token that resumes after `lastKey` in the snapshot at `rv`. */
  issue(rv: number, lastKey: string): string {
    return this.#encode(rv, `${lastKey}\u0000`);
  }

  /** The inconsistent continuation offered when `token` has expired: same position, latest state. */
  inconsistent(token: ContinueToken): string {
    return this.#encode(-1, token.start);
  }

  /** Decodes a token; a malformed one is a 400 like the apiserver's. */
  decode(text: string): ContinueToken {
    let parsed: unknown;
    try {
      const json = base64UrlToText(text);
      if (json === undefined) throw new Error("illegal base64 data");
      parsed = JSON.parse(json);
    } catch (e) {
      throw badRequest(`invalid continue token: ${(e as Error).message}`);
    }
    const t = parsed as Record<string, unknown>;
    if (typeof parsed !== "object" || parsed === null || t.v !== VERSION) {
      throw badRequest(`invalid continue token: continue key is not valid: incorrect encoded start resourceVersion (version ${VERSION})`);
    }
    if (typeof t.rv !== "number" || !Number.isInteger(t.rv) || t.rv === 0 || t.rv < -1) {
      throw badRequest("invalid continue token: continue key is not valid: incorrect encoded start resourceVersion");
    }
    if (typeof t.start !== "string" || t.start.length === 0) {
      throw badRequest("invalid continue token: continue key is not valid: encoded start key empty");
    }
    return {
      rv: t.rv,
      start: t.start,
      iat: typeof t.iat === "number" ? t.iat : 0,
      seq: typeof t.seq === "number" ? t.seq : 0,
    };
  }

  /** True when the token has outlived its TTL or {@link expireAll} ran after it was issued. */
  isExpired(token: ContinueToken, now = this.#clock.now()): boolean {
    return token.seq <= this.#expiredThrough || now - token.iat >= this.#ttlMs;
  }

  /** Every token issued so far becomes expired. */
  expireAll(): void {
    this.#expiredThrough = this.#seq;
  }

  #encode(rv: number, start: string): string {
    const body = { v: VERSION, rv, start, iat: this.#clock.now(), seq: ++this.#seq };
    return textToBase64Url(JSON.stringify(body));
  }
}
