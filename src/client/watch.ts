/**
 * The watch client (`appwatch watch`): streams app changes from an appwatch
 * server's `GET /v1/watch` WebSocket and prints one line per frame — a
 * readable summary, or each frame's JSON verbatim. It keeps the last resume
 * token and reconnects with it (backoff 0.5 s → 10 s), so a server restart or
 * a network blip costs no events; it says whether the stream resumed or
 * started over with a fresh snapshot.
 *
 * Runs on all three runtimes: Deno and Bun (and Node ≥ 22) have a global
 * `WebSocket`, which cannot set headers, so the bearer token goes in the
 * `access_token` query parameter there; Node 20 uses the `ws` package, which
 * sends it as `Authorization: Bearer`. The token is never printed.
 * @module
 */
import type { Logger } from "../log.ts";
import { Backoff, sleep } from "../watch/backoff.ts";
import { visible } from "../visible.ts";

/** What the client needs to know. */
export interface WatchClientOptions {
  /** The server's base URL (http, https, ws or wss), e.g. `http://127.0.0.1:8080`. */
  url: string;
  project?: string;
  domain?: string;
  app?: string;
  org?: string;
  /** Only if the service serves this cluster (its `--cluster-name`); else it refuses with 404. */
  cluster?: string;
  /** Start with a snapshot of the matching apps (default true). */
  snapshot: boolean;
  /** Resume token to start from. */
  resume?: string;
  /** Bearer token. */
  token?: string;
  /** `human`: one readable line per frame; `json`: each frame's JSON verbatim. */
  output: "human" | "json";
  /** Human output: also show heartbeats and other control frames. */
  verbose: boolean;
  /** Reconnect when nothing (not even a heartbeat) arrives for this long. Default 60 s. */
  idleTimeoutMs?: number;
  /** Reconnect backoff. Default 500 ms doubling to 10 s. */
  backoff?: { initialMs: number; maxMs: number };
  /** Give up on a connection attempt after this long. Default 10 s. */
  connectTimeoutMs?: number;
}

/** Where the client writes, and when it stops. */
export interface WatchClientIo {
  /** Frame lines (and, in human output, connection status lines). */
  stdout: (line: string) => void;
  /** Fatal errors. */
  stderr: (line: string) => void;
  /** Connection status in JSON output (human output prints it on stdout). */
  logger?: Logger;
  signal: AbortSignal;
  /** The clock used for line timestamps (tests). */
  now?: () => Date;
}

/** The minimal WebSocket surface used here: the global `WebSocket` and `ws` both have it. */
interface SocketLike {
  readonly readyState: number;
  close(code?: number, reason?: string): void;
  terminate?: () => void;
  addEventListener(type: string, listener: (event: never) => void): void;
}
type OpenSocket = (url: string, headers: Record<string, string>) => SocketLike;

/** The WebSocket of this runtime: the global one, else (Node 20) the `ws` package, which can send headers. */
async function socketFactory(): Promise<{ open: OpenSocket; headers: boolean }> {
  const Global = (globalThis as { WebSocket?: new (url: string) => SocketLike }).WebSocket;
  if (Global) return { open: (url) => new Global(url), headers: false };
  const { default: WS } = await import("ws");
  return { open: (url, headers) => new WS(url, { headers }) as unknown as SocketLike, headers: true };
}

// ---------------------------------------------------------------------------------------------
// Frames.

interface AppJson {
  metadata?: { id?: { org?: string; project?: string; domain?: string; name?: string } };
  status?: { currentReplicas?: number; ingress?: { publicUrl?: string }; conditions?: { deploymentStatus?: string; message?: string }[] };
}
/** A frame as the server sends it (docs/protocol.md). */
export type FrameJson = {
  createEvent?: { app?: AppJson };
  updateEvent?: { updatedApp?: AppJson };
  deleteEvent?: { app?: AppJson };
  resume?: string;
  start?: { mode?: string; apps?: number; replayed?: number; resumeFailed?: string; sandbox?: boolean };
  synced?: { resume?: string; after?: string };
  heartbeat?: { time?: string; resume?: string };
  pong?: { id?: string };
  error?: { code?: string; message?: string };
};

/** `HH:MM:SS` in local time. */
export function clock(d: Date): string {
  return `${String(d.getHours()).padStart(2, "0")}:${String(d.getMinutes()).padStart(2, "0")}:${String(d.getSeconds()).padStart(2, "0")}`;
}

/**
 * `org/project/domain/name` (org omitted when unset), as a person can read it: control,
 * bidirectional and zero-width characters escaped (`visible`), an empty part shown as `""`.
 */
export function appId(app: AppJson | undefined): string {
  const id = app?.metadata?.id;
  if (!id || [id.org, id.project, id.domain, id.name].every((s) => s === undefined || s === "")) return "(no id)";
  const parts = [id.project, id.domain, id.name].map((s) => (s === undefined || s === "" ? '""' : visible(s)));
  return [...(id.org ? [visible(id.org)] : []), ...parts].join("/");
}

/** The last condition's deployment status without the `DEPLOYMENT_STATUS_` prefix. */
export function appPhase(app: AppJson | undefined): string {
  const conditions = app?.status?.conditions ?? [];
  const last = conditions[conditions.length - 1]?.deploymentStatus ?? "DEPLOYMENT_STATUS_UNSPECIFIED";
  return last.replace(/^DEPLOYMENT_STATUS_/, "");
}

/** `CREATE  flyte/llm/development/gradio-chat  ACTIVE  1 replica  http://…` (no time). */
export function describeEvent(frame: FrameJson): string | undefined {
  const [kind, app] = frame.createEvent ? ["CREATE", frame.createEvent.app]
    : frame.updateEvent ? ["UPDATE", frame.updateEvent.updatedApp]
    : frame.deleteEvent ? ["DELETE", frame.deleteEvent.app]
    : [undefined, undefined];
  if (kind === undefined) return undefined;
  const n = app?.status?.currentReplicas ?? 0;
  const url = app?.status?.ingress?.publicUrl;
  return `${kind}  ${appId(app)}  ${appPhase(app)}  ${n} replica${n === 1 ? "" : "s"}${url ? `  ${visible(url)}` : ""}`;
}

/** How a stream started, in words: `snapshot (6 apps)`, `resumed (2 replayed)`, … */
export function describeStart(start: NonNullable<FrameJson["start"]>): string {
  // The server's sandbox mode: demo data must never pass for a cluster's.
  const sandbox = start.sandbox === true ? "  SANDBOX: demo data, not a real cluster" : "";
  if (start.mode === "resumed") return `resumed (${start.replayed ?? 0} replayed)${sandbox}`;
  if (start.mode === "live") return `live (no snapshot)${sandbox}`;
  const apps = `${start.apps ?? 0} app${start.apps === 1 ? "" : "s"}`;
  return (start.resumeFailed ? `fresh snapshot (${apps}; resume failed: ${start.resumeFailed})` : `snapshot (${apps})`) + sandbox;
}

const CLOSE_NAMES: Record<number, string> = {
  1000: "normal close",
  1001: "server shutting down",
  1006: "connection lost",
  1008: "policy violation",
  1009: "message too big",
  1011: "server error",
  1013: "try again later",
};

/** Close codes after which reconnecting cannot help. */
const FATAL_CLOSE = new Set([1008, 1009]);
/** HTTP statuses at connect after which reconnecting cannot help. */
const FATAL_STATUS = new Set([400, 401, 403]);

// ---------------------------------------------------------------------------------------------

/** The `/v1/watch` URL for `options` (without any token). */
export function watchUrl(options: WatchClientOptions, resume: string | undefined, scheme: "ws" | "http"): URL {
  const base = new URL(options.url);
  const secure = base.protocol === "https:" || base.protocol === "wss:";
  const u = new URL(base.href);
  u.protocol = scheme === "ws" ? (secure ? "wss:" : "ws:") : (secure ? "https:" : "http:");
  u.pathname = `${base.pathname.replace(/\/+$/, "")}/v1/watch`;
  u.search = "";
  u.hash = "";
  u.username = "";
  u.password = "";
  const q = u.searchParams;
  if (options.org !== undefined) q.set("org", options.org);
  if (options.cluster !== undefined) q.set("cluster", options.cluster);
  if (options.project !== undefined) q.set("project", options.project);
  if (options.domain !== undefined) q.set("domain", options.domain);
  if (options.app !== undefined) q.set("app", options.app);
  if (!options.snapshot) q.set("snapshot", "false");
  if (resume !== undefined) q.set("resume", resume);
  return u;
}

/** How one connection ended. */
type SessionEnd =
  | { kind: "aborted" }
  | { kind: "failed"; detail: string } // never opened
  | { kind: "closed"; code: number; reason: string; started: boolean } // opened, then closed
  | { kind: "idle"; started: boolean };

/** Runs the client until `io.signal` aborts (exit code 0) or the server refuses it for good (1). */
export async function runWatchClient(options: WatchClientOptions, io: WatchClientIo): Promise<number> {
  const now = io.now ?? (() => new Date());
  const human = options.output === "human";
  const backoff = options.backoff ?? { initialMs: 500, maxMs: 10_000 };
  const idleTimeoutMs = options.idleTimeoutMs ?? 60_000;
  const connectTimeoutMs = options.connectTimeoutMs ?? 10_000;
  const shownUrl = new URL(options.url).origin + new URL(options.url).pathname.replace(/\/+$/, "");
  /** A connection note: a line on stdout in human output, a log record (stderr) in JSON output. */
  const status = (text: string, msg: string, fields: Record<string, unknown>) => {
    if (human) io.stdout(`${clock(now())} ${text}`);
    else io.logger?.info(msg, fields);
  };

  const { open, headers: canSendHeaders } = await socketFactory();
  let resume = options.resume;
  // The engine's backoff, without jitter: one client, no herd to spread, and the printed delays stay exact.
  const retry = new Backoff({ initialMs: backoff.initialMs, maxMs: backoff.maxMs, factor: 2, jitter: 0 });
  let sessions = 0; // connections that got their start frame
  let lastEnd = "";
  let lastStart: NonNullable<FrameJson["start"]> | undefined;

  while (!io.signal.aborted) {
    const end = await session();
    if (end.kind === "aborted" || io.signal.aborted) break;
    if (end.kind === "failed") {
      const d = await diagnose();
      if (d.fatal) {
        io.stderr(`appwatch watch: ${d.text}`);
        return 1;
      }
      lastEnd = d.text;
    } else if (end.kind === "closed") {
      if (end.started) retry.reset();
      const name = end.reason || CLOSE_NAMES[end.code] || "closed";
      if (FATAL_CLOSE.has(end.code)) {
        io.stderr(`appwatch watch: the server closed the stream: ${name} (${end.code})`);
        return 1;
      }
      lastEnd = `${name} (${end.code})`;
    } else {
      if (end.started) retry.reset();
      lastEnd = `no frame for ${idleTimeoutMs / 1000} s`;
    }
    const delay = retry.next();
    status(
      end.kind === "failed" ? `CONNECT FAILED  ${lastEnd}; retrying in ${delay / 1000} s` : `DISCONNECTED  ${lastEnd}; reconnecting in ${delay / 1000} s`,
      end.kind === "failed" ? "connect failed" : "disconnected",
      { reason: lastEnd, retryInMs: delay, resume: resume !== undefined },
    );
    await sleep(delay, io.signal);
  }
  // The last token lets a later run continue exactly here (--resume).
  if (!human) io.logger?.info("stopped", resume !== undefined ? { resume } : {});
  return 0;

  /** One connection, from open to close. Frames are printed as they come. */
  function session(): Promise<SessionEnd> {
    return new Promise((resolve) => {
      const url = watchUrl(options, resume, "ws");
      const headers: Record<string, string> = {};
      if (options.token !== undefined) {
        if (canSendHeaders) headers.authorization = `Bearer ${options.token}`;
        else url.searchParams.set("access_token", options.token);
      }
      let ws: SocketLike;
      try {
        ws = open(url.href, headers);
      } catch (err) {
        resolve({ kind: "failed", detail: (err as Error).message });
        return;
      }
      let opened = false;
      let started = false;
      let done = false;
      let timer: ReturnType<typeof setTimeout> | undefined;
      const arm = (ms: number, onFire: () => void) => {
        if (timer) clearTimeout(timer);
        timer = setTimeout(onFire, ms);
      };
      const finish = (end: SessionEnd, close?: { code: number; reason: string }) => {
        if (done) return;
        done = true;
        if (timer) clearTimeout(timer);
        io.signal.removeEventListener("abort", onAbort);
        if (close) {
          try {
            if (ws.readyState === 0 && ws.terminate) ws.terminate();
            else ws.close(close.code, close.reason);
          } catch { /* already closing */ }
          // Do not wait for the peer's close frame (it may be gone): the socket is abandoned.
          if (ws.terminate) setTimeout(() => ws.terminate?.(), 1000);
        }
        resolve(end);
      };
      const onAbort = () => finish({ kind: "aborted" }, { code: 1000, reason: "client stopping" });
      io.signal.addEventListener("abort", onAbort, { once: true });
      arm(connectTimeoutMs, () => finish({ kind: "failed", detail: "connect timeout" }, { code: 4000, reason: "connect timeout" }));

      ws.addEventListener("open", () => {
        opened = true;
        arm(idleTimeoutMs, onIdle);
      });
      ws.addEventListener("message", (event: { data: unknown }) => {
        if (done) return;
        arm(idleTimeoutMs, onIdle);
        const text = typeof event.data === "string" ? event.data : new TextDecoder().decode(event.data as ArrayBuffer);
        let frame: FrameJson | undefined;
        try {
          frame = JSON.parse(text) as FrameJson;
        } catch { /* printed raw below */ }
        if (frame?.start) started = true;
        onFrame(text, frame);
      });
      ws.addEventListener("close", (event: { code: number; reason: string }) => {
        if (!opened) finish({ kind: "failed", detail: `closed before open (${event.code})` });
        else finish({ kind: "closed", code: event.code, reason: event.reason, started });
      });
      ws.addEventListener("error", () => {
        // A close event follows; `ws` gives no close event when the connection never opened.
        if (!opened) setTimeout(() => finish({ kind: "failed", detail: "connection error" }), 50);
      });
      function onIdle() {
        finish({ kind: "idle", started }, { code: 4000, reason: "idle timeout" });
      }
    });
  }

  /** Prints one frame and remembers its resume token. */
  function onFrame(text: string, frame: FrameJson | undefined): void {
    const token = frame?.resume ?? frame?.synced?.resume ?? frame?.heartbeat?.resume;
    if (token !== undefined) resume = token;
    if (!human) {
      io.stdout(text);
      if (frame?.start) {
        io.logger?.info(sessions === 0 ? "connected" : "reconnected", { url: shownUrl, ...frame.start });
        sessions++;
      }
      return;
    }
    const t = clock(now());
    if (frame === undefined) {
      if (options.verbose) io.stdout(`${t} ?  ${text}`);
      return;
    }
    const event = describeEvent(frame);
    if (event !== undefined) io.stdout(`${t} ${event}`);
    else if (frame.start) {
      io.stdout(`${t} ${sessions === 0 ? "CONNECTED" : "RECONNECTED"}  ${shownUrl}  ${describeStart(frame.start)}`);
      sessions++;
      lastStart = frame.start;
    } else if (frame.synced) {
      const start = lastStart;
      const after = frame.synced.after ?? "snapshot";
      const detail = after === "snapshot" ? ` (${start?.apps ?? 0} app${start?.apps === 1 ? "" : "s"})`
        : after === "resume" ? ` (${start?.replayed ?? 0} replayed)`
        : "";
      io.stdout(`${t} SYNCED ${after}${detail}`);
    } else if (frame.error) io.stdout(`${t} ERROR  ${frame.error.code ?? "error"}: ${frame.error.message ?? ""}`);
    else if (frame.heartbeat) {
      if (options.verbose) io.stdout(`${t} HEARTBEAT`);
    } else if (options.verbose) io.stdout(`${t} ${text}`);
  }

  /** After a failed connection: a plain GET of the same URL says why (400/401/403 and appwatch's 404 are final). */
  async function diagnose(): Promise<{ fatal: boolean; text: string }> {
    const url = watchUrl(options, resume, "http");
    const headers: Record<string, string> = {};
    if (options.token !== undefined) headers.authorization = `Bearer ${options.token}`;
    let res: Response;
    try {
      res = await fetch(url, { headers, signal: AbortSignal.any([io.signal, AbortSignal.timeout(5000)]) });
    } catch (err) {
      return { fatal: false, text: `cannot connect to ${shownUrl}: ${networkError(err)}` };
    }
    const body = await res.text().catch(() => "");
    let message = body.trim().slice(0, 500);
    let code = "";
    try {
      const j = JSON.parse(body) as { code?: string; message?: string };
      if (typeof j.message === "string") message = j.message;
      if (typeof j.code === "string") code = j.code;
    } catch { /* not JSON */ }
    // appwatch's own 404 (its error shape) on /v1/watch: another cluster than --cluster; final too.
    if (FATAL_STATUS.has(res.status) || (res.status === 404 && code === "not_found")) {
      return { fatal: true, text: `the server refused the stream: HTTP ${res.status}${code ? ` ${code}` : ""}: ${message}` };
    }
    if (res.status === 426) return { fatal: false, text: `the WebSocket handshake with ${shownUrl} failed` };
    return { fatal: false, text: `HTTP ${res.status}${code ? ` ${code}` : ""}${message ? `: ${message}` : ""}` };
  }
}

/** A short reason for a failed fetch (runtimes word it differently; never the URL, which may carry a resume token). */
function networkError(err: unknown): string {
  const e = err as { name?: string; message?: string; code?: string; cause?: { code?: string; message?: string } };
  const text = `${e.cause?.code ?? ""} ${e.code ?? ""} ${e.cause?.message ?? ""} ${e.message ?? ""}`;
  if (/ECONNREFUSED|connection refused/i.test(text)) return "connection refused";
  if (/ENOTFOUND|EAI_AGAIN|dns|lookup|name resolution/i.test(text)) return "host not found";
  if (/ECONNRESET|connection reset/i.test(text)) return "connection reset";
  if (e.name === "TimeoutError" || /timed? ?out/i.test(text)) return "timed out";
  if (/certificate|tls|ssl/i.test(text)) return "TLS error";
  return (e.cause?.code ?? e.cause?.message ?? e.message ?? String(err)).replace(/\(?https?:\/\/\S+/g, "").slice(0, 200);
}

