/**
 * A step's {@link Delay} in milliseconds: the one place the reflector's backoff and jitter are
 * used, so the state machine stays pure (machine.ts).
 * @module
 */
import type { Backoff } from "./backoff.ts";
import type { Delay } from "./machine.ts";

/**
 * The milliseconds to wait for `delay`, after forgetting past failures if `resetBackoff`. Every
 * failure advances `backoff`, Retry-After or not (a server that keeps saying "retry soon" still
 * backs us off next time it does not); `random` jitters a Retry-After by up to 10 %, so many
 * watchers told the same delay do not return at once.
 *
 * @example
 * ```ts
 * import { Backoff } from "./backoff.ts";
 * const backoff = new Backoff({ jitter: 0 });
 * delayMs({ kind: "backoff" }, false, backoff, Math.random); // 800
 * delayMs({ kind: "retry-after", ms: 3000 }, false, backoff, () => 0); // 3000
 * ```
 */
export function delayMs(delay: Delay, resetBackoff: boolean, backoff: Backoff, random: () => number): number {
  if (resetBackoff) backoff.reset();
  if (delay.kind === "none") return 0;
  const backoffMs = backoff.next();
  return delay.kind === "retry-after" ? delay.ms * (1 + 0.1 * random()) : backoffMs;
}
