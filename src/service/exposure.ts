/**
 * Safe defaults (issue 24): `appwatch serve` listens on loopback unless told otherwise, and says
 * so loudly when it listens beyond loopback with no bearer auth, since then anyone who can reach
 * the port sees every app of the cluster (names, URLs, status messages).
 * @module
 */

/** Whether `hostname` is a loopback address or name (127.0.0.0/8, ::1, localhost): reachable from this machine only. */
export function isLoopback(hostname: string): boolean {
  const h = hostname.trim().toLowerCase().replace(/^\[|\]$/g, "");
  if (h === "localhost" || h.endsWith(".localhost") || h === "::1" || h === "0:0:0:0:0:0:0:1") return true;
  const v4 = /^(?:::ffff:)?(\d{1,3})\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.exec(h);
  return v4 !== null && v4[1] === "127";
}

/**
 * The warning to log when listening on `hostname` without auth beyond loopback; undefined when
 * the address is loopback or bearer auth is on.
 */
export function exposureWarning(hostname: string, authOn: boolean): string | undefined {
  if (authOn || isLoopback(hostname)) return undefined;
  const where = hostname === "0.0.0.0" || hostname === "::" || hostname === "" ? "every network interface" : hostname;
  return `NO AUTH ON ${where.toUpperCase()}: appwatch listens on ${where} without bearer auth, so anyone who can reach this port sees every app it watches. ` +
    "Turn auth on (--auth-tokens-file or APPWATCH_AUTH_TOKENS), or listen on loopback only (--host 127.0.0.1, the default).";
}

/**
 * The warning to log when a Deno server listens beyond loopback (issue 24, F12), auth or not: a
 * bearer token does not help, because what Deno cannot bound happens before any request is
 * handled. `Deno.serve` has no request-header timeout (a connection that never finishes its headers
 * stays open), and Deno's WebSocket accepts unmasked client frames, buffers an unfinished
 * fragmented message without limit and ends protocol errors with a bare TCP close. Undefined on
 * loopback and on the other runtimes, whose servers enforce these limits themselves.
 */
export function runtimeLimitsWarning(runtime: string, hostname: string): string | undefined {
  if (runtime !== "deno" || isLoopback(hostname)) return undefined;
  return `DENO LIMITS ON ${hostname === "0.0.0.0" || hostname === "::" || hostname === "" ? "EVERY NETWORK INTERFACE" : hostname.toUpperCase()}: ` +
    "Deno's server has no request-header timeout (slow or unfinished requests stay open), accepts unmasked WebSocket frames and buffers an unfinished fragmented message without limit. " +
    "Put an ingress in front that times out request headers (e.g. nginx client_header_timeout 10s) and limits connections per client, or run on Node: docs/operations.md, Runtime limits and hardening.";
}
