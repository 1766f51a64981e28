/**
 * Flyte's KService naming and public ingress (`KServiceName` / `PublicIngress` in
 * `app/internal/k8s/app_client.go`). Known to be non-injective (flyteorg/flyte#7622); kept
 * byte-for-byte compatible because Flyte's Deploy names the objects this way.
 * @module
 */
import { goToLower } from "./gostrings.ts";
import type { AppsConfig, Identifier, Ingress } from "./model.ts";
import { sha256Hex } from "./sha256.ts";

const MAX_NAME = 63;
const PREFIX = 54;
const encoder = new TextEncoder();
const decoder = new TextDecoder();

/**
 * `lower("{name}-{project}-{domain}")` (Go's `strings.ToLower`) when it fits in 63 bytes; otherwise its first 54 bytes,
 * "-", and the hex of the first 4 bytes of sha256("{project}/{domain}/{name}") (not lowercased;
 * org unused). Lengths are bytes, as in Go.
 */
export function KServiceName(id: Identifier): string {
  const project = id.project ?? "";
  const domain = id.domain ?? "";
  const name = id.name ?? "";
  const raw = goToLower(`${name}-${project}-${domain}`);
  const bytes = encoder.encode(raw);
  if (bytes.length <= MAX_NAME) return raw;
  const digest = sha256Hex(encoder.encode(`${project}/${domain}/${name}`)).slice(0, 8);
  // Go slices bytes; a cut through a multi-byte character cannot round-trip through a JS
  // string, so TextDecoder replaces it with U+FFFD (only reachable with non-ASCII names).
  return `${decoder.decode(bytes.subarray(0, PREFIX))}-${digest}`;
}

/**
 * The app's public URL: `{scheme||https}://lower(KServiceName(id).baseDomain)[:port]`, or
 * `undefined` when `baseDomain` is "" (Flyte returns nil: no `ingress` key at all).
 */
export function publicIngress(id: Identifier, config: AppsConfig): Ingress | undefined {
  if (config.baseDomain === "") return undefined;
  const scheme = config.scheme || "https";
  const host = goToLower(`${KServiceName(id)}.${config.baseDomain}`);
  const port = config.ingressAppsPort !== 0 ? `:${config.ingressAppsPort}` : "";
  return { publicUrl: `${scheme}://${host}${port}` };
}
