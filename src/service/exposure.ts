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
