/**
 * LIST: the resourceVersion semantics table of the Kubernetes API docs ("Resource versions"),
 * pagination with `limit`/`continue` over one consistent snapshot (§1.6), and the 410s of
 * expired tokens and compacted RVs (§1.3).
 * @module
 */
import type { ContinueToken, ContinueTokens } from "./continue.ts";
import { badRequest, expired, tooLargeResourceVersion } from "./errors.ts";
import { parseResourceVersion, type ListQuery } from "./query.ts";
import { API_VERSION, RESOURCES } from "./resources.ts";
import type { ObjectStore } from "./store.ts";
import type { KubeObject, SandboxResource } from "./types.ts";

/** What a list needs from the sandbox. */
export interface ListContext {
  readonly store: ObjectStore;
  readonly tokens: ContinueTokens;
  /** Waits (up to tooLargeWaitMs) until the global RV reaches `rv`; false on timeout. */
  waitForRV(rv: number): Promise<boolean>;
}

/** A list response body (`ServiceList` / `RevisionList`). */
export interface ListBody {
  apiVersion: string;
  items: KubeObject[];
  kind: string;
  metadata: { continue?: string; remainingItemCount?: number; resourceVersion: string };
}

// etcd3/errors.go wording.
const LIST_TOO_OLD = "The resourceVersion for the provided list is too old.";
const INCONSISTENT_CONTINUE = "The provided continue parameter is too old to display a consistent list result. " +
  "You can start a new list without the continue parameter, or use the continue token in this response to " +
  "retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - " +
  "objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list.";

interface Snapshot {
  rv: number;
  objects: ReadonlyMap<string, KubeObject>;
  keys: readonly string[];
  /** First key to consider ("" = from the start). */
  start: string;
}

async function ensureReached(ctx: ListContext, rv: number): Promise<void> {
  if (rv <= ctx.store.rv) return;
  if (await ctx.waitForRV(rv)) return;
  throw tooLargeResourceVersion(rv, ctx.store.rv);
}

function current(ctx: ListContext, resource: SandboxResource, start = ""): Snapshot {
  return {
    rv: ctx.store.rv,
    objects: ctx.store.objects(resource),
    keys: ctx.store.sortedKeys(resource),
    start,
  };
}

function historical(rv: number, objects: ReadonlyMap<string, KubeObject>, start = ""): Snapshot {
  return { rv, objects, keys: [...objects.keys()].sort(), start };
}

/** Picks the state a list reads from. Throws 400/410/504 as the apiserver would. */
async function chooseSnapshot(ctx: ListContext, resource: SandboxResource, q: ListQuery): Promise<Snapshot> {
  const store = ctx.store;
  if (q.continueToken !== "") {
    const token: ContinueToken = ctx.tokens.decode(q.continueToken);
    // RV "0" with continue is a plain continuation; any other RV is a 400 (pager.go clears it).
    if (q.resourceVersion !== "" && q.resourceVersion !== "0") {
      throw badRequest("specifying resource version is not allowed when using continue");
    }
    if (token.rv === -1) {
      if (ctx.tokens.isExpired(token)) throw expired(INCONSISTENT_CONTINUE, ctx.tokens.inconsistent(token));
      return current(ctx, resource, token.start);
    }
    const state = ctx.tokens.isExpired(token) ? undefined : store.stateAt(resource, token.rv);
    if (!state) throw expired(INCONSISTENT_CONTINUE, ctx.tokens.inconsistent(token));
    return historical(token.rv, state, token.start);
  }
  const rvText = q.resourceVersion;
  if (rvText === "" || rvText === "0") return current(ctx, resource);
  const rv = parseResourceVersion(rvText);
  const exact = q.resourceVersionMatch === "Exact" || (q.resourceVersionMatch === "" && q.limit > 0);
  await ensureReached(ctx, rv);
  if (!exact) return current(ctx, resource); // NotOlderThan: the latest state is never older.
  if (rv === store.rv) return current(ctx, resource);
  const state = store.stateAt(resource, rv);
  if (!state) throw expired(LIST_TOO_OLD);
  return historical(rv, state);
}

/** Serves a list request; throws SandboxError for 400/410/504. */
export async function runList(ctx: ListContext, resource: SandboxResource, namespace: string | undefined, q: ListQuery): Promise<ListBody> {
  const snap = await chooseSnapshot(ctx, resource, q);
  const prefix = namespace === undefined ? "" : `${namespace}/`;
  const filtered = !q.labelSelector.empty || !q.fieldSelector.empty;
  const items: KubeObject[] = [];
  let lastKey: string | undefined;
  let more = false;
  let remaining = 0;
  for (const key of snap.keys) {
    if (prefix && !key.startsWith(prefix)) continue;
    if (snap.start && key < snap.start) continue;
    if (q.limit > 0 && items.length >= q.limit) {
      // The page is full; etcd reports "more" when any key follows, matching or not.
      more = true;
      remaining++;
      continue;
    }
    const obj = snap.objects.get(key)!;
    if (q.labelSelector.matches(obj.metadata.labels) && q.fieldSelector.matches(obj)) {
      items.push(obj);
      lastKey = key;
    }
  }
  const metadata: ListBody["metadata"] = { resourceVersion: String(snap.rv) };
  if (more && lastKey !== undefined) {
    // Keys in alphabetical order, as Go encodes an unstructured list.
    const token = ctx.tokens.issue(snap.rv, lastKey);
    const ordered: ListBody["metadata"] = { continue: token } as ListBody["metadata"];
    if (!filtered) ordered.remainingItemCount = remaining;
    ordered.resourceVersion = metadata.resourceVersion;
    return { apiVersion: API_VERSION, items, kind: RESOURCES[resource].listKind, metadata: ordered };
  }
  return { apiVersion: API_VERSION, items, kind: RESOURCES[resource].listKind, metadata };
}
