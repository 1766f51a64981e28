/**
 * A real-time failure guard for a promise: it only ever fires when the test is already broken
 * (against hangs, not a timing assertion).
 * @module
 */

/** `p`, or a failure naming `what` (worked out then, if a function) after `timeoutMs`. */
export async function within<T>(p: Promise<T>, what: string | (() => string), timeoutMs = 10_000): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    return await Promise.race([
      p,
      new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`timed out waiting for ${typeof what === "string" ? what : what()}`)), timeoutMs))),
    ]);
  } finally {
    clearTimeout(timer);
  }
}
