/**
 * Helpers for the service tests (tests/service-*.test.ts): an in-process
 * service on the sandbox, WebSocket and SSE clients that record frames, a
 * KService builder, and small HTTP/metrics readers. Works on Deno, Bun and
 * Node 20 (which has no global WebSocket: the `ws` package stands in).
 */
import { createLogger, type Logger } from "../../src/log.ts";
import { KServiceName } from "../../src/flyte/naming.ts";
import { startSandboxCluster } from "../../src/sandbox/cluster.ts";
import type { Sandbox } from "../../src/sandbox/sandbox.ts";
import { type RunningService, type ServiceSettings, startService } from "../../src/service/server.ts";
import type { KubeObject } from "../../src/watch/types.ts";
import type { Clock } from "../../src/watch/clock.ts";
import { within } from "./within.ts";

/** Polls `pred` until it holds; fails after `timeoutMs` with `what` (computed then, so it can show the latest state). */
export async function waitFor(pred: () => boolean, what: string | (() => string), timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!pred()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for: ${typeof what === "string" ? what : what()}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

/** The runtime's WebSocket (Deno, Bun, Node ≥ 22), else `ws` (same event API). */
export const WS: typeof WebSocket = globalThis.WebSocket ??
  ((await import("ws")).default as unknown as typeof WebSocket);

/** Settings for a test service: loopback, any port. */
export function testSettings(overrides: Partial<ServiceSettings> = {}): ServiceSettings {
  return {
    port: 0,
    host: "127.0.0.1",
    baseDomain: "localhost",
    scheme: "http",
    ingressAppsPort: 30081,
    watchBufferSize: 100,
    pingSeconds: 30,
    slowConsumer: "coalesce",
    authTokens: [],
    allowedOrigins: [],
    maxConnectionsPerClient: 64,
    maxMessageBytes: 4096,
    streamBufferBytes: 1024 * 1024,
    heartbeatSeconds: 15,
    resumeWindow: 10_000,
    shutdownTimeoutSeconds: 10,
    ...overrides,
  };
}

/** A running test service with its sandbox at hand. */
export interface TestService extends RunningService {
  sb: Sandbox;
  /** Base URL of the sandbox's Kubernetes API. */
  sandboxUrl: string;
  /** ws://… base of the service. */
  wsUrl: string;
  /** Log lines at warn and above (for diagnosis in failure messages). */
  logs: string[];
}

/** Starts the service on the sandbox (6 demo apps in "flyte") and waits for the initial sync. */
export async function startTestService(overrides: Partial<ServiceSettings> = {}, options: { sync?: boolean; logger?: Logger; initialResourceVersion?: number; clock?: Clock } = {}): Promise<TestService> {
  const logs: string[] = [];
  const logger = options.logger ?? createLogger({ level: "warn", sink: (l) => logs.push(l) });
  // The sandbox with its 6 demo apps in "flyte", no demo activity.
  const cluster = await startSandboxCluster({ demoIntervalMs: 0, ...(options.initialResourceVersion !== undefined ? { initialResourceVersion: options.initialResourceVersion } : {}) });
  const service = await startService(testSettings(overrides), { logger, cluster, ...(options.clock ? { clock: options.clock } : {}) });
  if (options.sync ?? true) {
    try {
      await service.watching;
    } catch (err) {
      await service.stop();
      throw err;
    }
  }
  const sb = cluster.sandbox;
  if (options.sync ?? true) await settleReplicas(service, sb);
  return Object.assign(service, { sb, sandboxUrl: cluster.url, wsUrl: service.url.replace(/^http/, "ws"), logs });
}

/**
 * Replica counts come from the Revision watch, which is listed before the apps: they are in the
 * snapshot already, so there is nothing to wait for (kept for the tests that call it).
 */
export async function settleReplicas(_service: RunningService, _sb: Sandbox): Promise<void> {}

// deno-lint-ignore no-explicit-any
export type Json = any;

/** A WebSocket client that records every frame (parsed JSON) and how it closed. */
export class WsClient {
  readonly ws: WebSocket;
  readonly frames: Json[] = [];
  /** Set once closed. */
  closeInfo: { code: number; reason: string } | undefined;
  readonly closed: Promise<{ code: number; reason: string }>;
  /** Frames are parsed and passed here; with `keep: false` they are not stored. */
  onFrame: ((frame: Json, text: string) => void) | undefined;
  keep = true;
  received = 0;

  private constructor(ws: WebSocket) {
    this.ws = ws;
    this.closed = new Promise((resolve) => {
      ws.addEventListener("close", (e) => {
        const ev = e as CloseEvent;
        this.closeInfo = { code: ev.code, reason: ev.reason };
        resolve(this.closeInfo);
      });
    });
    ws.addEventListener("message", (e) => {
      const data = (e as MessageEvent).data;
      const text = typeof data === "string" ? data : new TextDecoder().decode(data as ArrayBuffer);
      const frame = JSON.parse(text);
      this.received++;
      if (this.keep) this.frames.push(frame);
      this.onFrame?.(frame, text);
    });
  }

  /** Opens `url`; rejects when the connection cannot be established. */
  static connect(url: string, options: { keep?: boolean; onFrame?: (frame: Json, text: string) => void } = {}): Promise<WsClient> {
    const ws = new WS(url);
    const client = new WsClient(ws);
    if (options.keep === false) client.keep = false;
    client.onFrame = options.onFrame;
    return new Promise((resolve, reject) => {
      const onOpen = () => {
        ws.removeEventListener("error", onError);
        resolve(client);
      };
      const onError = (e: Event) => {
        ws.removeEventListener("open", onOpen);
        reject(new Error(`WebSocket ${url} failed: ${(e as ErrorEvent).message ?? e.type}`));
      };
      ws.addEventListener("open", onOpen, { once: true });
      ws.addEventListener("error", onError, { once: true });
    });
  }

  send(data: string | ArrayBuffer | Uint8Array): void {
    this.ws.send(data as string);
  }

  close(code = 1000): void {
    try {
      this.ws.close(code);
    } catch { /* closed */ }
  }

  /** Waits until `pred(frames)` holds. */
  async until(pred: (frames: Json[]) => boolean, what: string, timeoutMs = 10_000): Promise<void> {
    await waitFor(() => pred(this.frames), () => `${what} (got ${this.frames.length} frames: ${this.describe().slice(-8).join(" | ")})`, timeoutMs);
  }

  /** Waits until the `synced` frame that ends the snapshot or replay has arrived. */
  synced(timeoutMs = 10_000): Promise<void> {
    return this.until((f) => f.some((x) => x.synced), "a synced frame", timeoutMs);
  }

  /** Waits until there are `n` app events (creates/updates/deletes). */
  async events(n: number, timeoutMs = 10_000): Promise<Json[]> {
    await this.until((f) => appEvents(f).length >= n, `${n} app events`, timeoutMs);
    return appEvents(this.frames);
  }

  describe(): string[] {
    return this.frames.map(describeFrame);
  }
}

/** One SSE message. */
export interface SseMessage {
  event: string;
  id: string | undefined;
  data: Json;
}

/** A Server-Sent Events client on fetch that records messages. */
export class SseClient {
  readonly response: Response;
  readonly messages: SseMessage[] = [];
  ended = false;
  readonly done: Promise<void>;
  readonly #abort: AbortController;

  private constructor(response: Response, abort: AbortController) {
    this.response = response;
    this.#abort = abort;
    this.done = this.#read();
  }

  static async connect(url: string, headers: Record<string, string> = {}): Promise<SseClient> {
    const abort = new AbortController();
    const res = await fetch(url, { headers: { accept: "text/event-stream", ...headers }, signal: abort.signal });
    if (res.status !== 200) {
      const text = await res.text();
      throw new Error(`SSE ${url}: HTTP ${res.status} ${text}`);
    }
    return new SseClient(res, abort);
  }

  async #read(): Promise<void> {
    const reader = this.response.body!.getReader();
    const decoder = new TextDecoder();
    let buf = "";
    try {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        buf += decoder.decode(value, { stream: true });
        for (let i = buf.indexOf("\n\n"); i >= 0; i = buf.indexOf("\n\n")) {
          const block = buf.slice(0, i);
          buf = buf.slice(i + 2);
          let event = "message";
          let id: string | undefined;
          const data: string[] = [];
          for (const line of block.split("\n")) {
            const c = line.indexOf(":");
            const field = c < 0 ? line : line.slice(0, c);
            const value = c < 0 ? "" : line.slice(c + 1).replace(/^ /, "");
            if (field === "event") event = value;
            else if (field === "id") id = value;
            else if (field === "data") data.push(value);
          }
          if (data.length) this.messages.push({ event, id, data: JSON.parse(data.join("\n")) });
        }
      }
    } catch {
      // aborted by close()
    } finally {
      this.ended = true;
    }
  }

  /** The `data` of every message (same objects a WebSocket client gets). */
  get frames(): Json[] {
    return this.messages.map((m) => m.data);
  }

  async until(pred: (frames: Json[]) => boolean, what: string, timeoutMs = 10_000): Promise<void> {
    await waitFor(() => pred(this.frames), () => `${what} (SSE got ${this.messages.length}: ${this.frames.map(describeFrame).slice(-8).join(" | ")})`, timeoutMs);
  }

  synced(timeoutMs = 10_000): Promise<void> {
    return this.until((f) => f.some((x) => x.synced), "a synced frame", timeoutMs);
  }

  async events(n: number, timeoutMs = 10_000): Promise<Json[]> {
    await this.until((f) => appEvents(f).length >= n, `${n} app events`, timeoutMs);
    return appEvents(this.frames);
  }

  close(): void {
    this.#abort.abort();
  }
}

/** The app of an event frame, or undefined. */
export function appOf(frame: Json): Json | undefined {
  return frame?.createEvent?.app ?? frame?.updateEvent?.updatedApp ?? frame?.deleteEvent?.app;
}

/** Only the create/update/delete frames. */
export function appEvents(frames: Json[]): Json[] {
  return frames.filter((f) => appOf(f) !== undefined);
}

/** "create p/d/n", "start snapshot", "synced resync", … */
export function describeFrame(frame: Json): string {
  const app = appOf(frame);
  if (app) {
    const id = app.metadata?.id ?? {};
    const kind = frame.createEvent ? "create" : frame.updateEvent ? "update" : "delete";
    return `${kind} ${id.project}/${id.domain}/${id.name}`;
  }
  if (frame.start) return `start ${frame.start.mode}`;
  if (frame.synced) return `synced ${frame.synced.after}`;
  return Object.keys(frame)[0] ?? "?";
}

/** Describes only the app events of `frames`. */
export function eventLines(frames: Json[]): string[] {
  return appEvents(frames).map(describeFrame);
}

/** An event frame without its resume token (to compare payloads across transports). */
export function withoutResume(frame: Json): Json {
  const { resume: _resume, ...rest } = frame;
  return rest;
}

/** A Flyte-managed KService as Flyte creates it (labels and app-id annotation). */
export function ksvc(project: string, domain: string, name: string, extra: { ns?: string; image?: string; org?: string } = {}): KubeObject {
  const id = { project, domain, name };
  return {
    apiVersion: "serving.knative.dev/v1",
    kind: "Service",
    metadata: {
      name: KServiceName(id),
      namespace: extra.ns ?? "flyte",
      labels: { "flyte.org/app-managed": "true", "flyte.org/project": project, "flyte.org/domain": domain },
      annotations: { "flyte.org/app-id": `${project}/${domain}/${name}`, ...(extra.org ? { "flyte.org/app-org": extra.org } : {}) },
    },
    spec: { template: { spec: { containers: [{ image: extra.image ?? "app:v1" }] } } },
  };
}

/** The KService name of an app. */
export function ksvcName(project: string, domain: string, name: string): string {
  return KServiceName({ project, domain, name });
}

/** A Knative status whose Ready condition carries `message` (each distinct message is an App change). */
export function statusWithMessage(message: string, ready: "True" | "Unknown" = "True"): Record<string, unknown> {
  return {
    conditions: [
      { type: "ConfigurationsReady", status: "True", lastTransitionTime: "2026-04-30T12:00:09Z" },
      { type: "Ready", status: ready, message, lastTransitionTime: "2026-04-30T12:00:10Z" },
      { type: "RoutesReady", status: "True", lastTransitionTime: "2026-04-30T12:00:10Z" },
    ],
  };
}

/** The condition messages of an App (one of them is what {@link statusWithMessage} set). */
export function messagesOf(app: Json): string[] {
  return ((app?.status?.conditions ?? []) as Json[]).map((c) => c.message).filter((m): m is string => typeof m === "string");
}

/** GET (or any method) returning status, parsed JSON (if any), text and headers. */
export async function http(url: string, init: RequestInit = {}): Promise<{ status: number; body: Json; text: string; headers: Headers }> {
  const res = await fetch(url, init);
  const text = await res.text();
  let body: Json;
  try {
    body = text ? JSON.parse(text) : undefined;
  } catch {
    body = undefined;
  }
  return { status: res.status, body, text, headers: res.headers };
}

/** The value of one Prometheus sample (labels must match exactly as written); undefined if absent. */
export function metric(text: string, name: string, labels = ""): number | undefined {
  const want = labels ? `${name}{${labels}}` : name;
  for (const line of text.split("\n")) {
    if (line.startsWith("#")) continue;
    const sp = line.lastIndexOf(" ");
    if (line.slice(0, sp) === want) return Number(line.slice(sp + 1));
  }
  return undefined;
}

/** Sum of every sample of a family. */
export function metricSum(text: string, name: string): number {
  let sum = 0;
  for (const line of text.split("\n")) {
    if (line.startsWith(name + " ") || line.startsWith(name + "{")) sum += Number(line.slice(line.lastIndexOf(" ") + 1));
  }
  return sum;
}

export { within };

/** What {@link untilHub} needs of the service's app client (`TestService.apps`). */
interface HubSubscriber {
  subscribe(target: ""): AsyncIterable<unknown> & { close(): void; readonly pending: number };
}

/**
 * Waits until `holds()` (journal size, event counters, the apps the hub shows), re-checked each time
 * the hub publishes an app change: a subscription of its own is the signal, since the hub moves its
 * journal, counters and shown apps in the same step as it pushes to subscribers. The subscription is
 * made before the first check, so a change between a check and the wait is not missed. Fails after
 * `timeoutMs` (against hangs, not a timing assertion).
 */
export async function untilHub(apps: HubSubscriber, holds: () => boolean | Promise<boolean>, what: string | (() => string), timeoutMs = 10_000): Promise<void> {
  let sub = apps.subscribe("");
  let finished = false;
  try {
    await within(
      (async () => {
        let it = sub[Symbol.asyncIterator]();
        while (!(await holds())) {
          let end = (await it.next()).done;
          while (!end && sub.pending > 0) end = (await it.next()).done; // a burst: check once after it
          if (end) {
            if (finished) return;
            // Closed (a slow-consumer policy, the hub cleared): a new one, then check again.
            sub = apps.subscribe("");
            it = sub[Symbol.asyncIterator]();
          }
        }
      })(),
      what,
      timeoutMs,
    );
  } finally {
    finished = true;
    sub.close();
  }
}

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** Polls an async condition every `intervalMs` until it holds (fails after `timeoutMs`). */
export async function eventually(pred: () => Promise<boolean>, what: string | (() => string), timeoutMs = 10_000, intervalMs = 50): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await pred())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for: ${typeof what === "string" ? what : what()}`);
    await sleep(intervalMs);
  }
}
