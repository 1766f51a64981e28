/**
 * kubeconfig files: valibot schemas, parsing (`yaml`), merging a `KUBECONFIG`
 * list the way kubectl does, and selecting one context. No I/O happens here:
 * {@link loadClusterConfig} in `cluster-config.ts` reads the files.
 *
 * Every error is a {@link KubeconfigError} whose message names the file, the
 * context and the field, e.g.
 * `kubeconfig /x/config: context "dev": user "bob": client-key-data is not valid base64`.
 * @module
 */
import * as v from "valibot";
import { parseDocument } from "yaml";
import { yamlErrorText } from "../yaml-error.ts";

/** The ExecCredential API versions appwatch can talk to. */
export const EXEC_API_VERSIONS = [
  "client.authentication.k8s.io/v1",
  "client.authentication.k8s.io/v1beta1",
] as const;

/** One of {@link EXEC_API_VERSIONS}. */
export type ExecApiVersion = (typeof EXEC_API_VERSIONS)[number];

/** An exec credential plugin, validated, with its command path resolved. */
export interface ExecConfig {
  apiVersion: ExecApiVersion;
  /** The command; a relative path containing `/` is resolved against the kubeconfig's directory (like kubectl). */
  command: string;
  args: string[];
  env: { name: string; value: string }[];
  installHint?: string;
  /** `Never`, `IfAvailable` (default when absent) or `Always`. appwatch never gives the plugin a terminal. */
  interactiveMode: "Never" | "IfAvailable" | "Always";
  provideClusterInfo: boolean;
}

/** A bad kubeconfig (or service-account directory). The message never contains a secret. */
export class KubeconfigError extends Error {
  override readonly name = "KubeconfigError";
}

// ---------------------------------------------------------------------------
// Schemas. `looseObject` everywhere: unknown fields are kept (forward compatible).

const str = () => v.string("must be a string");
const bool = () => v.boolean("must be a boolean (true or false)");
const isMapping = (x: unknown): x is Record<string, unknown> =>
  typeof x === "object" && x !== null && !Array.isArray(x);
/** A YAML mapping (valibot's object schemas accept arrays; this does not). A missing key "is required". */
const map = <E extends v.ObjectEntries>(entries: E) =>
  v.pipe(
    v.custom<Record<string, unknown>>(isMapping, "must be a mapping"),
    v.looseObject(entries, (issue) => (issue.expected === "Object" ? "must be a mapping" : "is required")),
  );
const list = <S extends v.GenericSchema>(item: S) => v.array(item, "must be a list");

/** `clusters[].cluster`. */
export const ClusterSchema = map({
  server: v.nullish(str()),
  "certificate-authority": v.nullish(str()),
  "certificate-authority-data": v.nullish(str()),
  "insecure-skip-tls-verify": v.nullish(bool()),
  "tls-server-name": v.nullish(str()),
  "proxy-url": v.nullish(str()),
  extensions: v.nullish(list(map({ name: str(), extension: v.unknown() }))),
});

/** `users[].user.exec`. */
export const ExecSchema = map({
  apiVersion: v.nullish(str()),
  command: v.nullish(str()),
  args: v.nullish(list(str())),
  env: v.nullish(list(map({ name: str(), value: str() }))),
  installHint: v.nullish(str()),
  interactiveMode: v.nullish(
    v.picklist(["Never", "IfAvailable", "Always"], "must be one of Never, IfAvailable, Always"),
  ),
  provideClusterInfo: v.nullish(bool()),
});

/** `users[].user`. */
export const UserSchema = map({
  token: v.nullish(str()),
  tokenFile: v.nullish(str()),
  "client-certificate": v.nullish(str()),
  "client-certificate-data": v.nullish(str()),
  "client-key": v.nullish(str()),
  "client-key-data": v.nullish(str()),
  username: v.nullish(str()),
  password: v.nullish(str()),
  exec: v.nullish(ExecSchema),
  "auth-provider": v.nullish(map({ name: v.nullish(str()) })),
  as: v.nullish(str()),
  "as-uid": v.nullish(str()),
  "as-groups": v.nullish(v.unknown()),
  "as-user-extra": v.nullish(v.unknown()),
});

/** `contexts[].context`. */
export const ContextSchema = map({
  cluster: v.nullish(str()),
  user: v.nullish(str()),
  namespace: v.nullish(str()),
});

// The file-level schema checks only the structure (names, mappings); the
// entries of the selected context are validated in detail by selectContext,
// so an error can name the context it concerns.
const entry = (key: string) => map({ name: str(), [key]: v.nullish(map({})) });

/** The top level of a kubeconfig file. */
export const KubeconfigFileSchema = map({
  apiVersion: v.nullish(str()),
  kind: v.nullish(str()),
  "current-context": v.nullish(str()),
  clusters: v.nullish(list(entry("cluster"))),
  users: v.nullish(list(entry("user"))),
  contexts: v.nullish(list(entry("context"))),
});

/** A validated `clusters[].cluster`. */
export type KubeconfigCluster = v.InferOutput<typeof ClusterSchema>;
/** A validated `users[].user`. */
export type KubeconfigUser = v.InferOutput<typeof UserSchema>;
/** A validated `contexts[].context`. */
export type KubeconfigContext = v.InferOutput<typeof ContextSchema>;

/** A named entry of one kind, remembering the file that defined it. */
export interface KubeconfigEntry {
  name: string;
  /** The raw mapping under `cluster:` / `user:` / `context:` (validated later). */
  value: Record<string, unknown>;
  /** Absolute path of the file that defined it (relative paths resolve against its directory). */
  file: string;
}

/** One parsed file. */
export interface ParsedKubeconfig {
  file: string;
  currentContext: string | undefined;
  clusters: KubeconfigEntry[];
  users: KubeconfigEntry[];
  contexts: KubeconfigEntry[];
}

/** Several files merged with kubectl's rules. */
export interface MergedKubeconfig {
  files: string[];
  currentContext: { name: string; file: string } | undefined;
  clusters: Map<string, KubeconfigEntry>;
  users: Map<string, KubeconfigEntry>;
  contexts: Map<string, KubeconfigEntry>;
}

/** Formats the first valibot issue as `path message` (never echoes the received value). */
export function describeIssue(issues: readonly v.BaseIssue<unknown>[]): string {
  const issue = issues[0];
  if (!issue) return "is invalid";
  let path = "";
  for (const item of issue.path ?? []) {
    const key = (item as { key: unknown }).key;
    path += typeof key === "number" ? `[${key}]` : `${path ? "." : ""}${String(key)}`;
  }
  return path ? `${path} ${issue.message}` : issue.message;
}

/**
 * Parses and structurally validates one kubeconfig file. An empty file is an
 * empty config (like kubectl).
 * @param file absolute path, used in error messages and to remember where entries came from.
 */
export function parseKubeconfig(text: string, file: string): ParsedKubeconfig {
  const doc = parseDocument(text);
  const yamlError = doc.errors[0];
  if (yamlError) {
    throw new KubeconfigError(`kubeconfig ${file}: not valid YAML at ${yamlErrorText(yamlError)}`);
  }
  const raw: unknown = doc.toJS({ maxAliasCount: 100 });
  if (raw === null || raw === undefined) {
    return { file, currentContext: undefined, clusters: [], users: [], contexts: [] };
  }
  if (!isMapping(raw)) {
    throw new KubeconfigError(`kubeconfig ${file}: the top level must be a mapping (got ${Array.isArray(raw) ? "a list" : typeof raw})`);
  }
  const parsed = v.safeParse(KubeconfigFileSchema, raw);
  if (!parsed.success) {
    throw new KubeconfigError(`kubeconfig ${file}: ${describeIssue(parsed.issues)}`);
  }
  const out = parsed.output;
  const entries = (kind: "cluster" | "user" | "context", items: readonly Record<string, unknown>[] | null | undefined) => {
    const seen = new Set<string>();
    const result: KubeconfigEntry[] = [];
    for (const item of items ?? []) {
      const name = item.name as string;
      if (seen.has(name)) throw new KubeconfigError(`kubeconfig ${file}: duplicate ${kind} name "${name}"`);
      seen.add(name);
      result.push({ name, value: (item[kind] as Record<string, unknown> | null | undefined) ?? {}, file });
    }
    return result;
  };
  return {
    file,
    currentContext: out["current-context"] || undefined,
    clusters: entries("cluster", out.clusters),
    users: entries("user", out.users),
    contexts: entries("context", out.contexts),
  };
}

/**
 * Merges parsed files like kubectl merges a `KUBECONFIG` list: for clusters,
 * users and contexts (maps by name) the FIRST file that defines a name wins;
 * `current-context` comes from the first file that sets it.
 */
export function mergeKubeconfigs(files: readonly ParsedKubeconfig[]): MergedKubeconfig {
  const merged: MergedKubeconfig = {
    files: files.map((f) => f.file),
    currentContext: undefined,
    clusters: new Map(),
    users: new Map(),
    contexts: new Map(),
  };
  for (const f of files) {
    if (!merged.currentContext && f.currentContext) merged.currentContext = { name: f.currentContext, file: f.file };
    for (const [target, items] of [
      [merged.clusters, f.clusters],
      [merged.users, f.users],
      [merged.contexts, f.contexts],
    ] as const) {
      for (const e of items) if (!target.has(e.name)) target.set(e.name, e);
    }
  }
  return merged;
}

/** True when the merged config defines nothing at all (kubectl then falls back to in-cluster). */
export function isEmptyKubeconfig(m: MergedKubeconfig): boolean {
  return !m.currentContext && m.clusters.size === 0 && m.users.size === 0 && m.contexts.size === 0;
}

/** The entries of one context, validated, with their defining files. */
export interface SelectedContext {
  contextName: string;
  context: KubeconfigContext;
  contextFile: string;
  clusterName: string;
  cluster: KubeconfigCluster;
  clusterFile: string;
  /** Undefined for a context without a user (anonymous). */
  userName: string | undefined;
  user: KubeconfigUser | undefined;
  userFile: string | undefined;
  /** `kubeconfig <file>: context "<name>"` — the prefix of every later error. */
  where: string;
}

/** The label used in messages for a set of files (`/a` or `/a:/b`). */
export function filesLabel(files: readonly string[]): string {
  return files.join(":");
}

/**
 * Picks the context (`context` if given, else `current-context`) and validates
 * its context, cluster and user entries.
 */
export function selectContext(merged: MergedKubeconfig, context?: string): SelectedContext {
  const label = `kubeconfig ${filesLabel(merged.files)}`;
  let name = context;
  if (!name) {
    if (!merged.currentContext) {
      throw new KubeconfigError(`${label}: current-context is not set and no context was given`);
    }
    name = merged.currentContext.name;
  }
  const ctxEntry = merged.contexts.get(name);
  if (!ctxEntry) {
    const available = [...merged.contexts.keys()].map((n) => `"${n}"`).join(", ") || "none";
    const why = context ? "" : " (current-context)";
    throw new KubeconfigError(`${label}: context "${name}"${why} not found (available: ${available})`);
  }
  const where = `kubeconfig ${ctxEntry.file}: context "${name}"`;
  const ctx = v.safeParse(ContextSchema, ctxEntry.value);
  if (!ctx.success) throw new KubeconfigError(`${where}: ${describeIssue(ctx.issues)}`);

  const clusterName = ctx.output.cluster;
  if (!clusterName) throw new KubeconfigError(`${where}: cluster is not set`);
  const clusterEntry = merged.clusters.get(clusterName);
  if (!clusterEntry) throw new KubeconfigError(`${where}: cluster "${clusterName}" not found`);
  const cluster = v.safeParse(ClusterSchema, clusterEntry.value);
  if (!cluster.success) {
    throw new KubeconfigError(`${where}: cluster "${clusterName}": ${describeIssue(cluster.issues)}`);
  }

  const userName = ctx.output.user || undefined;
  let user: KubeconfigUser | undefined;
  let userFile: string | undefined;
  if (userName) {
    const userEntry = merged.users.get(userName);
    if (!userEntry) throw new KubeconfigError(`${where}: user "${userName}" not found`);
    const parsed = v.safeParse(UserSchema, userEntry.value);
    if (!parsed.success) throw new KubeconfigError(`${where}: user "${userName}": ${describeIssue(parsed.issues)}`);
    user = parsed.output;
    userFile = userEntry.file;
  }
  return {
    contextName: name,
    context: ctx.output,
    contextFile: ctxEntry.file,
    clusterName,
    cluster: cluster.output,
    clusterFile: clusterEntry.file,
    userName,
    user,
    userFile,
    where,
  };
}

/** Validates an `exec` block. `resolveCommand` turns a relative path into an absolute one. */
export function execConfigFrom(
  exec: NonNullable<KubeconfigUser["exec"]>,
  where: string,
  resolveCommand: (command: string) => string,
): ExecConfig {
  const apiVersion = exec.apiVersion;
  if (!apiVersion) throw new KubeconfigError(`${where}: exec.apiVersion is not set`);
  if (!(EXEC_API_VERSIONS as readonly string[]).includes(apiVersion)) {
    throw new KubeconfigError(
      `${where}: exec.apiVersion "${apiVersion}" is not supported (use ${EXEC_API_VERSIONS.join(" or ")})`,
    );
  }
  if (!exec.command) throw new KubeconfigError(`${where}: exec.command is not set`);
  const out: ExecConfig = {
    apiVersion: apiVersion as ExecApiVersion,
    command: exec.command.includes("/") ? resolveCommand(exec.command) : exec.command,
    args: exec.args ?? [],
    env: (exec.env ?? []).map((e) => ({ name: e.name, value: e.value })),
    interactiveMode: exec.interactiveMode ?? "IfAvailable",
    provideClusterInfo: exec.provideClusterInfo ?? false,
  };
  if (exec.installHint) out.installHint = exec.installHint;
  return out;
}

const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

/** Decodes standard (padded) base64 to text, or returns undefined when it is not valid base64. */
export function decodeBase64(data: string): string | undefined {
  const clean = data.replace(/\s+/g, "");
  if (clean.length % 4 !== 0 || !BASE64.test(clean)) return undefined;
  let binary: string;
  try {
    binary = atob(clean);
  } catch {
    return undefined;
  }
  const bytes = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
  return new TextDecoder().decode(bytes);
}

/** Encodes UTF-8 text as standard base64. */
export function encodeBase64(text: string): string {
  const bytes = new TextEncoder().encode(text);
  let binary = "";
  for (const b of bytes) binary += String.fromCharCode(b);
  return btoa(binary);
}

/** PEM block labels found in `pem`, in order. */
export function pemLabels(pem: string): string[] {
  return [...pem.matchAll(/-----BEGIN ([A-Z0-9 ]+)-----/g)].map((m) => m[1] ?? "");
}

/** Private key PEM labels every runtime's TLS stack accepts. */
export const SUPPORTED_KEY_LABELS = ["RSA PRIVATE KEY", "PRIVATE KEY", "EC PRIVATE KEY"] as const;
