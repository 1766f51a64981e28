/**
 * What the service watches — the API server, the namespaces, and whether the data is the
 * sandbox's demo apps — as the CLI chose it (`src/cli.ts` `openCluster`), passed down through
 * options. It answers `GET /v1/info` (the board's header reads it) and decides what `/readyz`,
 * `/metrics` and the stream `start` frame say about the sandbox.
 * @module
 */

/** The cluster a service watches, as its clients may see it. */
export interface ClusterInfo {
  /** The API server's base URL (`""`: not known). */
  readonly server: string;
  /** Namespaces watched; `["*"]` for all. */
  readonly namespaces: readonly string[];
  /** The apps are the built-in sandbox's demo data, not a real cluster's. */
  readonly sandbox: boolean;
  /** The cluster's name (`--cluster-name`); none: unnamed, as Flyte's data plane. */
  readonly name?: string;
  /** Its organization (`--cluster-org`), with a name only. */
  readonly organization?: string;
}

/** A cluster as a client names it: Flyte's `common.ClusterIdentifier`, or the `cluster` query. */
export interface ClusterTarget {
  readonly name: string;
  readonly organization?: string;
}

/** `org/name` or `name`. */
function clusterText(c: ClusterTarget): string {
  return JSON.stringify(c.organization ? `${c.organization}/${c.name}` : c.name);
}

/**
 * Why `target` is not the cluster served here (a "not found" message), or `undefined` when it is.
 * An organization in the target must be the cluster's; an unnamed cluster is no named target.
 */
export function otherCluster(info: ClusterInfo, target: ClusterTarget): string | undefined {
  if (!info.name) return `no cluster ${clusterText(target)} here: this appwatch's cluster has no name (start it with --cluster-name)`;
  if (target.name === info.name && (!target.organization || target.organization === info.organization)) return undefined;
  return `no cluster ${clusterText(target)} here: this appwatch serves cluster ${clusterText({ name: info.name, ...(info.organization ? { organization: info.organization } : {}) })}`;
}

/** Nothing known: not the sandbox (what a service without the option reports). */
export const UNKNOWN_CLUSTER: ClusterInfo = Object.freeze({ server: "", namespaces: Object.freeze([]) as readonly string[], sandbox: false });

/** `host[:port]` of an API server URL (credentials and path dropped); the text itself when it is no URL. */
export function serverHost(server: string): string {
  try {
    return new URL(server).host;
  } catch {
    return server;
  }
}

/** The body of `GET /v1/info` (docs/protocol.md). */
export function infoBody(info: ClusterInfo): { cluster: { name?: string; organization?: string; host: string; namespaces: string[] }; sandbox: boolean } {
  const named = info.name ? { name: info.name, ...(info.organization ? { organization: info.organization } : {}) } : {};
  return { cluster: { ...named, host: serverHost(info.server), namespaces: [...info.namespaces] }, sandbox: info.sandbox };
}

/** What `/readyz` adds to its body in sandbox mode (nothing otherwise). */
export function readySandboxNote(info: ClusterInfo): { sandbox?: true; note?: string } {
  return info.sandbox ? { sandbox: true, note: "SANDBOX MODE: demo apps from the built-in fake Kubernetes API, not a real cluster" } : {};
}
