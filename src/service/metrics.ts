/**
 * The service's counters and their Prometheus text rendering (`GET /metrics`).
 * Plain numbers kept where things happen; rendering reads them on scrape.
 * @module
 */
import type { AppK8sClient } from "../flyte/app-client.ts";
import type { Subscription } from "../flyte/subscriptions.ts";
import type { FrameKind } from "./frames.ts";

/** Build facts for `appwatch_build_info`. */
export interface BuildInfo {
  version: string;
  runtime: string;
  runtimeVersion: string;
}

type Labels = Record<string, string>;

function escapeLabel(v: string): string {
  return v.replace(/\\/g, "\\\\").replace(/\n/g, "\\n").replace(/"/g, '\\"');
}

function labelText(labels: Labels): string {
  const parts = Object.entries(labels).map(([k, v]) => `${k}="${escapeLabel(v)}"`);
  return parts.length ? `{${parts.join(",")}}` : "";
}

/** Accumulates Prometheus families and renders the text exposition format (0.0.4). */
class Exposition {
  #out: string[] = [];
  family(name: string, type: "counter" | "gauge", help: string, samples: [Labels, number][]): void {
    this.#out.push(`# HELP ${name} ${help}`, `# TYPE ${name} ${type}`);
    for (const [labels, value] of samples) this.#out.push(`${name}${labelText(labels)} ${Number.isFinite(value) ? value : 0}`);
  }
  text(): string {
    return this.#out.join("\n") + "\n";
  }
}

/** Counters of the HTTP/WebSocket/SSE layer. */
export class ServiceMetrics {
  readonly build: BuildInfo;
  wsConnections = 0;
  sseConnections = 0;
  /** Open Connect / gRPC-Web `AppService.Watch` streams. */
  connectStreams = 0;
  /** Frames the runtime silently discarded (Bun past its backpressure limit); each ends its stream. */
  framesDroppedByRuntime = 0;
  /** Times a stream paused because its socket was over the high-water mark. */
  backpressureWaits = 0;
  /** Connections refused, by reason. */
  readonly rejected: Map<string, number> = new Map<string, number>();
  /** WebSocket closes by code. */
  readonly closes: Map<number, number> = new Map<number, number>();
  readonly #requests = new Map<string, number>(); // "route status" → n
  /** By kind, as plain properties: counted once per frame sent, so no map lookup on the delivery path. */
  readonly #frames: Record<FrameKind, number> = { createEvent: 0, updateEvent: 0, deleteEvent: 0, start: 0, synced: 0, heartbeat: 0, pong: 0, error: 0 };
  readonly #subscribers = new Map<string, number>();
  readonly #live = new Set<Subscription>();
  readonly #closedTotals = { delivered: 0, dropped: 0, coalesced: 0 };
  readonly #closedDroppedByPolicy = new Map<string, number>();

  /** The data is the sandbox's demo apps (`appwatch_sandbox` 1). */
  readonly sandbox: boolean;

  constructor(build: BuildInfo, options: { sandbox?: boolean } = {}) {
    this.build = build;
    this.sandbox = options.sandbox === true;
  }

  request(route: string, status: number): void {
    const key = `${route} ${status}`;
    this.#requests.set(key, (this.#requests.get(key) ?? 0) + 1);
  }

  reject(reason: string): void {
    this.rejected.set(reason, (this.rejected.get(reason) ?? 0) + 1);
  }

  closed(code: number): void {
    this.closes.set(code, (this.closes.get(code) ?? 0) + 1);
  }

  frameSent(kind: FrameKind): void {
    this.#frames[kind]++;
  }

  subscriberOpened(targetKind: string, sub: Subscription): void {
    this.#subscribers.set(targetKind, (this.#subscribers.get(targetKind) ?? 0) + 1);
    this.#live.add(sub);
  }

  subscriberClosed(targetKind: string, sub: Subscription): void {
    if (!this.#live.delete(sub)) return;
    this.#subscribers.set(targetKind, (this.#subscribers.get(targetKind) ?? 1) - 1);
    const s = sub.stats();
    this.#closedTotals.delivered += s.delivered;
    this.#closedTotals.coalesced += s.coalesced;
    this.#closedDroppedByPolicy.set(sub.policy, (this.#closedDroppedByPolicy.get(sub.policy) ?? 0) + s.dropped);
  }

  /** Frames sent so far, by kind. */
  framesSent(kind: FrameKind): number {
    return this.#frames[kind];
  }

  /** Renders every family, including the watch's and the app client's. */
  render(client: AppK8sClient): string {
    const e = new Exposition();
    e.family("appwatch_build_info", "gauge", "Build and runtime of this process.", [[{ ...this.build }, 1]]);
    e.family("appwatch_sandbox", "gauge", "1 when the apps are the built-in sandbox's demo data, not a real cluster's.", [[{}, this.sandbox ? 1 : 0]]);
    const health = client.health();
    e.family("appwatch_watch_synced", "gauge", "1 once the initial list of app KServices is complete.", [[{}, client.synced ? 1 : 0]]);
    e.family("appwatch_watch_healthy", "gauge", "1 while the KService watch is in contact with the API server (readiness follows it).", [[{}, health.healthy ? 1 : 0]]);
    const replicas = client.replicasHealth();
    if (replicas) e.family("appwatch_revision_watch_healthy", "gauge", "1 while the Revision watch (currentReplicas) is in contact with the API server; 0: replica counts degraded, the service stays ready.", [[{}, replicas.healthy ? 1 : 0]]);
    const w = client.watchMetrics();
    if (w) {
      e.family("appwatch_reflector_lists_total", "counter", "Complete list operations.", [[{}, w.lists]]);
      e.family("appwatch_reflector_relists_total", "counter", "Lists after the first (410 Expired, repeated errors).", [[{}, w.relists]]);
      e.family("appwatch_reflector_watches_total", "counter", "Watch requests sent.", [[{}, w.watches]]);
      e.family("appwatch_reflector_expired_total", "counter", "410 Expired answers.", [[{}, w.expired]]);
      e.family("appwatch_reflector_failures_total", "counter", "Failed API requests that led to a backoff.", [[{}, w.failures]]);
      e.family("appwatch_reflector_decode_errors_total", "counter", "Malformed watch lines.", [[{}, w.decodeErrors]]);
      e.family("appwatch_reflector_bytes_total", "counter", "Bytes of list and watch bodies read.", [[{}, w.bytes]]);
      e.family(
        "appwatch_reflector_reconnects_total",
        "counter",
        "Watch reconnections by cause.",
        Object.entries(w.reconnects).map(([cause, n]) => [{ cause }, n]),
      );
      e.family(
        "appwatch_reflector_watch_events_total",
        "counter",
        "Raw watch events by wire type.",
        Object.entries(w.events).map(([type, n]) => [{ type }, n]),
      );
      e.family("appwatch_reflector_last_event_timestamp_seconds", "gauge", "Time of the last watch event.", [[{}, w.lastEventTime / 1000]]);
    }
    const m = client.metrics;
    e.family("appwatch_app_events_total", "counter", "App events produced by the watch, by kind.", Object.entries(m.events).map(([kind, n]) => [{ kind }, n]));
    e.family("appwatch_app_unchanged_total", "counter", "KService changes that did not change the App (no event).", [[{}, m.unchanged]]);
    e.family("appwatch_app_conversion_errors_total", "counter", "KServices that could not be converted to an App.", [[{}, m.conversionErrors]]);
    e.family("appwatch_app_identity_mismatches", "gauge", "KServices whose flyte.org/project or flyte.org/domain label disagrees with their flyte.org/app-id (the App follows the app-id).", [[{}, client.identityMismatches]]);
    e.family("appwatch_revision_requests_total", "counter", "Revision GETs for currentReplicas.", [[{}, m.revisionRequests]]);
    e.family("appwatch_watch_loop_yields_total", "counter", "Times the watch loops paused a backlog of events so sockets get written and timers run.", [[{}, client.loopYields]]);
    e.family("appwatch_resume_journal_size", "gauge", "App changes held for resuming streams.", [[{}, client.journalSize]]);
    e.family("appwatch_stream_starts_total", "counter", "Streams started, by kind (resumeFailed: a resume answered with a snapshot).", Object.entries(m.starts).map(([kind, n]) => [{ kind }, n]));
    e.family("appwatch_subscribers", "gauge", "Open subscriptions by target kind.", [...this.#subscribers].map(([target, n]) => [{ target }, n]));
    let delivered = this.#closedTotals.delivered;
    let coalesced = this.#closedTotals.coalesced;
    const dropped = new Map(this.#closedDroppedByPolicy);
    for (const sub of this.#live) {
      const s = sub.stats();
      delivered += s.delivered;
      coalesced += s.coalesced;
      dropped.set(sub.policy, (dropped.get(sub.policy) ?? 0) + s.dropped);
    }
    e.family("appwatch_events_delivered_total", "counter", "App events taken by subscribers.", [[{}, delivered]]);
    e.family("appwatch_events_coalesced_total", "counter", "App events merged into a later state for a slow subscriber.", [[{}, coalesced]]);
    e.family("appwatch_events_dropped_total", "counter", "App events dropped for a slow subscriber, by policy.", [...dropped].map(([policy, n]) => [{ policy }, n]));
    e.family("appwatch_frames_sent_total", "counter", "Frames written to WebSocket/SSE clients, by kind.", Object.entries(this.#frames).filter(([, n]) => n > 0).map(([kind, n]) => [{ kind }, n]));
    e.family("appwatch_frames_dropped_by_runtime_total", "counter", "Frames the runtime discarded (each closes its stream).", [[{}, this.framesDroppedByRuntime]]);
    e.family("appwatch_backpressure_waits_total", "counter", "Pauses of a stream because its socket buffer was over the high-water mark.", [[{}, this.backpressureWaits]]);
    e.family("appwatch_ws_connections", "gauge", "Open WebSocket connections.", [[{}, this.wsConnections]]);
    e.family("appwatch_sse_connections", "gauge", "Open Server-Sent Events streams.", [[{}, this.sseConnections]]);
    e.family("appwatch_connect_streams", "gauge", "Open Connect / gRPC-Web AppService.Watch streams.", [[{}, this.connectStreams]]);
    e.family("appwatch_connections_rejected_total", "counter", "Stream requests refused, by reason.", [...this.rejected].map(([reason, n]) => [{ reason }, n]));
    e.family("appwatch_ws_closes_total", "counter", "WebSocket closes by code.", [...this.closes].map(([code, n]) => [{ code: String(code) }, n]));
    e.family(
      "appwatch_http_requests_total",
      "counter",
      "HTTP requests by route and status.",
      [...this.#requests].map(([key, n]) => {
        const i = key.lastIndexOf(" ");
        return [{ route: key.slice(0, i), status: key.slice(i + 1) }, n];
      }),
    );
    return e.text();
  }
}
