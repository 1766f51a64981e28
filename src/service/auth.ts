/**
 * Optional bearer-token auth for API clients. Tokens are compared in constant
 * time (both sides hashed with SHA-256, then every byte compared), so response
 * timing does not reveal how much of a guess was right. Tokens are never logged.
 * @module
 */

/** Checks presented tokens against the configured set. */
export interface BearerAuth {
  verify(presented: string): Promise<boolean>;
}

async function sha256(text: string): Promise<Uint8Array> {
  return new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text)));
}

/** Constant-time equality of two equal-length byte arrays. */
export function timingSafeEqual(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  let diff = 0;
  for (let i = 0; i < a.length; i++) diff |= a[i]! ^ b[i]!;
  return diff === 0;
}

/** A verifier for `tokens` (empty strings are ignored). */
export function createBearerAuth(tokens: string[]): BearerAuth {
  const digests = Promise.all(tokens.filter((t) => t.length > 0).map(sha256));
  return {
    async verify(presented) {
      const d = await sha256(presented);
      let ok = false;
      for (const known of await digests) ok = timingSafeEqual(d, known) || ok; // check all: no early exit
      return ok;
    },
  };
}
