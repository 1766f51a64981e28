/**
 * A scripted Kubernetes API server on loopback for protocol tests: each
 * request is recorded and answered by the next responder in a queue, so a
 * test controls exactly what the client sees, byte for byte, over real HTTP.
 */
import { serveFetch } from "../../src/serve.ts";

export interface Recorded {
  method: string;
  path: string;
  query: Record<string, string>;
  /** Raw query keys in order of appearance (to assert what was NOT sent). */
  keys: string[];
  authorization: string | null;
  time: number;
}

export type Responder = (req: Recorded, signal: AbortSignal) => Response | Promise<Response>;

export interface Scripted {
  url: string;
  requests: Recorded[];
  /** Queue a responder for the next unanswered request. */
  next(...responders: Responder[]): void;
  /**
   * Forget queued responders and recorded requests (between tests). With
   * `pathPart`, only requests whose path contains it are recorded and
   * answered from the queue: a late request from a previous test (sent just
   * before that test aborted it) must not eat this test's responders.
   */
  reset(pathPart?: string): void;
  /** Answer used when the queue is empty (default: a watch that hangs until the client leaves). */
  fallback: Responder;
  /** Resolves when `n` requests have arrived. */
  waitForRequests(n: number, timeoutMs?: number): Promise<void>;
  /** Open responses right now. */
  open(): number;
  close(): Promise<void>;
}

const enc = new TextEncoder();

export async function startScripted(): Promise<Scripted> {
  const queue: Responder[] = [];
  const requests: Recorded[] = [];
  const waiters: { n: number; resolve: () => void }[] = [];
  let open = 0;
  let accept: string | undefined;
  const self: Scripted = {
    url: "",
    requests,
    next: (...r) => queue.push(...r),
    reset: (pathPart) => {
      accept = pathPart;
      queue.length = 0;
      requests.length = 0;
      self.fallback = (_req, signal) => hang(signal);
    },
    fallback: (_req, signal) => hang(signal),
    waitForRequests: (n, timeoutMs = 10_000) =>
      new Promise<void>((resolve, reject) => {
        if (requests.length >= n) return resolve();
        const t = setTimeout(() => reject(new Error(`timed out waiting for request #${n}; got ${requests.length}: ${requests.map((r) => r.path + "?" + new URLSearchParams(r.query)).join(" | ")}`)), timeoutMs);
        waiters.push({ n, resolve: () => (clearTimeout(t), resolve()) });
      }),
    open: () => open,
    close: async () => {
      await server.close();
    },
  };
  const server = await serveFetch(async (req) => {
    const url = new URL(req.url);
    if (accept !== undefined && !url.pathname.includes(accept)) return hang(req.signal);
    const rec: Recorded = {
      method: req.method,
      path: url.pathname,
      query: Object.fromEntries(url.searchParams),
      keys: [...url.searchParams.keys()],
      authorization: req.headers.get("authorization"),
      time: Date.now(),
    };
    requests.push(rec);
    for (const w of waiters.filter((w) => requests.length >= w.n)) {
      waiters.splice(waiters.indexOf(w), 1);
      w.resolve();
    }
    const responder = queue.shift() ?? self.fallback;
    const res = await responder(rec, req.signal);
    open++;
    if (!res.body) {
      open--;
      return res;
    }
    // Count the response as open until its body ends or the client goes away.
    let done = false;
    const finish = () => {
      if (!done) {
        done = true;
        open--;
      }
    };
    const reader = res.body.getReader();
    const body = new ReadableStream<Uint8Array>({
      async pull(c) {
        try {
          const { value, done: end } = await reader.read();
          if (end) {
            finish();
            c.close();
          } else c.enqueue(value);
        } catch (err) {
          finish();
          c.error(err);
        }
      },
      cancel(reason) {
        finish();
        return reader.cancel(reason);
      },
    });
    return new Response(body, { status: res.status, headers: res.headers });
  });
  (self as { url: string }).url = server.url;
  return self;
}

const JSON_HEADERS = { "content-type": "application/json" };

/** A KService-like object. */
export function obj(name: string, rv: string, extra: { uid?: string; namespace?: string; labels?: Record<string, string>; spec?: unknown } = {}) {
  return {
    apiVersion: "serving.knative.dev/v1",
    kind: "Service",
    metadata: {
      name,
      namespace: extra.namespace ?? "flyte",
      uid: extra.uid ?? `uid-${name}`,
      resourceVersion: rv,
      labels: extra.labels ?? { "flyte.org/app-managed": "true" },
    },
    spec: extra.spec ?? {},
  };
}

/** A list page. */
export function listPage(items: unknown[], rv: string, cont = ""): Responder {
  return () =>
    new Response(
      JSON.stringify({ kind: "ServiceList", apiVersion: "serving.knative.dev/v1", metadata: { resourceVersion: rv, continue: cont }, items }),
      { headers: JSON_HEADERS },
    );
}

/** A Status error answer. */
export function status(code: number, reason: string, extra: { message?: string; retryAfter?: number; continue?: string; causes?: unknown[] } = {}): Responder {
  return () => {
    const headers: Record<string, string> = { ...JSON_HEADERS };
    if (extra.retryAfter !== undefined) headers["retry-after"] = String(extra.retryAfter);
    return new Response(
      JSON.stringify({
        kind: "Status",
        apiVersion: "v1",
        metadata: extra.continue ? { continue: extra.continue } : {},
        status: "Failure",
        message: extra.message ?? reason,
        reason,
        code,
        ...(extra.retryAfter !== undefined || extra.causes ? { details: { retryAfterSeconds: extra.retryAfter, causes: extra.causes } } : {}),
      }),
      { status: code, headers },
    );
  };
}

export type Ending = "close" | "hang" | "cut";

/** A watch stream: the given events (objects are JSON-encoded), then an ending. */
export function watch(events: ({ type: string; object: unknown } | string)[], ending: Ending = "hang", options: { gapMs?: number } = {}): Responder {
  return (_req, signal) => {
    let i = 0;
    const stream = new ReadableStream<Uint8Array>({
      async pull(c) {
        if (i < events.length) {
          if (options.gapMs && i > 0) await new Promise((r) => setTimeout(r, options.gapMs));
          const e = events[i++]!;
          c.enqueue(enc.encode(typeof e === "string" ? e : JSON.stringify(e) + "\n"));
          return;
        }
        if (ending === "close") c.close();
        else if (ending === "cut") {
          // Let the client read what was sent first: a RST can discard unread data.
          await new Promise((r) => setTimeout(r, 50));
          c.error(new Error("cut by test"));
        }
        else await waitAbort(signal); // hang: a half-open connection
        if (signal.aborted) c.close();
      },
    });
    return new Response(stream, { headers: JSON_HEADERS });
  };
}

/** A watch that never sends anything (but keeps the connection open). */
export function hang(signal: AbortSignal): Response {
  const stream = new ReadableStream<Uint8Array>({
    async pull(c) {
      await waitAbort(signal);
      c.close();
    },
  });
  return new Response(stream, { headers: JSON_HEADERS });
}

function waitAbort(signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    signal.addEventListener("abort", () => resolve(), { once: true });
  });
}

export const ev = {
  added: (o: unknown) => ({ type: "ADDED", object: o }),
  modified: (o: unknown) => ({ type: "MODIFIED", object: o }),
  deleted: (o: unknown) => ({ type: "DELETED", object: o }),
  bookmark: (rv: string, end = false) => ({
    type: "BOOKMARK",
    object: {
      kind: "Service",
      apiVersion: "serving.knative.dev/v1",
      metadata: { resourceVersion: rv, ...(end ? { annotations: { "k8s.io/initial-events-end": "true" } } : {}) },
    },
  }),
  error: (code: number, reason: string, message = reason) => ({
    type: "ERROR",
    object: { kind: "Status", apiVersion: "v1", metadata: {}, status: "Failure", message, reason, code },
  }),
};
