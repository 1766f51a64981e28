/**
 * valibot schemas for everything a client sends the API: query strings, path
 * parameters, WebSocket messages. A failure becomes a 400 (or a 1008 close)
 * whose message names the offending key.
 * @module
 */
import * as v from "valibot";

/** A Flyte org/project/domain/app name as it may appear in a query. */
export const Name = v.pipe(
  v.string(),
  v.minLength(1, "must not be empty"),
  v.maxLength(253, "must be at most 253 characters"),
  v.regex(/^[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?$/, "must be letters, digits, '.', '_' or '-', starting and ending with a letter or digit"),
);
const Bool = v.pipe(
  v.picklist(["true", "false", "1", "0"], "must be true or false"),
  v.transform((s) => s === "true" || s === "1"),
);
const Token = v.pipe(v.string(), v.minLength(1, "must not be empty"), v.maxLength(8192, "is too long"));

/** `GET /v1/watch` query. */
export const WatchQuerySchema = v.pipe(
  v.strictObject({
    project: v.optional(Name),
    domain: v.optional(Name),
    app: v.optional(Name),
    org: v.optional(Name),
    cluster: v.optional(Name),
    cluster_org: v.optional(Name),
    snapshot: v.optional(Bool, "true"),
    resume: v.optional(Token),
    access_token: v.optional(v.string()),
  }),
  v.check((q) => q.app === undefined || (q.project !== undefined && q.domain !== undefined), "app needs project and domain"),
  v.check((q) => (q.project === undefined) === (q.domain === undefined), "project and domain go together"),
  v.check((q) => q.cluster_org === undefined || q.cluster !== undefined, "cluster_org needs cluster"),
);
/** A validated watch query. */
export type WatchQuery = v.InferOutput<typeof WatchQuerySchema>;

/** `GET /v1/apps` query (Flyte's List: project, domain, limit, token; and the org and the cluster). */
export const ListQuerySchema = v.pipe(v.strictObject({
  project: v.optional(Name),
  domain: v.optional(Name),
  org: v.optional(Name),
  cluster: v.optional(Name),
  cluster_org: v.optional(Name),
  limit: v.optional(v.pipe(
    v.string(),
    v.regex(/^\d{1,9}$/, "must be a non-negative integer"),
    v.transform(Number),
    v.maxValue(10_000, "must be at most 10000"),
  )),
  token: v.optional(v.pipe(v.string(), v.maxLength(8192, "is too long"))),
}), v.check((q) => q.cluster_org === undefined || q.cluster !== undefined, "cluster_org needs cluster"));

/**
 * One percent-decoded path segment of `GET /v1/apps/:project/:domain/:name`: any text, since the
 * identity comes from the cluster's `flyte.org/app-id` as Flyte reads it (`a/b` as `a%2Fb`, NUL as
 * `%00`); only an empty part cannot be a segment (AppService `Get` takes any `appId`).
 */
const PathPart = v.pipe(v.string(), v.minLength(1, "must not be empty"), v.maxLength(1024, "must be at most 1024 characters"));

/** `GET /v1/apps/:project/:domain/:name` path parameters. */
export const GetAppPathSchema = v.strictObject({
  project: PathPart,
  domain: PathPart,
  name: PathPart,
});

/** `GET /v1/apps/:project/:domain/:name` query: `org`, and the cluster. */
export const GetAppQuerySchema = v.pipe(v.strictObject({
  org: v.optional(Name),
  cluster: v.optional(Name),
  cluster_org: v.optional(Name),
}), v.check((q) => q.cluster_org === undefined || q.cluster !== undefined, "cluster_org needs cluster"));

/** Messages a WebSocket client may send. Anything else closes with 1008. */
export const ClientMessageSchema = v.strictObject({
  ping: v.strictObject({ id: v.optional(v.pipe(v.string(), v.maxLength(128))) }),
});

/** One validation problem, as the API reports it. */
export interface ApiIssue {
  key: string;
  message: string;
}

/** valibot issues → a one-line message naming the keys, and a list. */
export function issuesOf(issues: readonly v.BaseIssue<unknown>[]): { message: string; issues: ApiIssue[] } {
  const list = issues.map((i) => {
    const key = i.path?.map((p) => String(p.key)).join(".") ?? "";
    const message = i.kind === "schema" && i.type === "strict_object" && key
      ? "is not a known parameter"
      : i.message;
    return { key, message };
  });
  return { message: messageOf(list), issues: list };
}

/** The keys a query schema accepts: the entries of its strict object (piped schemas keep them). */
function knownKeys(schema: v.GenericSchema): ReadonlySet<string> | undefined {
  const entries = (schema as { entries?: Record<string, unknown> }).entries;
  return entries ? new Set(Object.keys(entries)) : undefined;
}

/**
 * Parses a URL's query string with `schema`. Every key is treated alike, prototype names
 * (`__proto__`, `toString`) included: an empty, repeated or unknown key is an error naming it.
 */
export function parseQuery<S extends v.GenericSchema>(
  schema: S,
  url: string,
): { ok: true; value: v.InferOutput<S> } | { ok: false; message: string; issues: ApiIssue[] } {
  const known = knownKeys(schema);
  const seen = new Map<string, string>();
  const issues: ApiIssue[] = [];
  for (const [key, value] of new URL(url).searchParams) {
    if (key === "") issues.push({ key, message: `a query parameter has an empty name (${JSON.stringify(`=${value}`)})` });
    else if (seen.has(key)) issues.push({ key, message: "is repeated" });
    else if (known && !known.has(key)) issues.push({ key, message: "is not a known parameter" });
    seen.set(key, value);
  }
  if (issues.length > 0) return { ok: false, message: messageOf(issues), issues: dedupe(issues) };
  // A null-prototype record: no key can reach Object.prototype, or be mistaken for one of its members.
  const query: Record<string, string> = Object.create(null);
  for (const [key, value] of seen) query[key] = value;
  const r = v.safeParse(schema, query);
  if (r.success) return { ok: true, value: r.output };
  return { ok: false, ...issuesOf(r.issues) };
}

function messageOf(issues: readonly ApiIssue[]): string {
  return dedupe(issues).map((i) => (i.key ? `${i.key}: ${i.message}` : i.message)).join("; ");
}

function dedupe(issues: readonly ApiIssue[]): ApiIssue[] {
  const out = new Map<string, ApiIssue>();
  for (const i of issues) out.set(`${i.key}\u0000${i.message}`, i);
  return [...out.values()];
}
