/**
 * What the reflector tells the outside about its steps: counters ({@link ReflectorMetrics}),
 * contact with the API server ({@link ReflectorHealth}) and log lines. The state machine decides
 * (its {@link Note}s); this module only renders.
 * @module
 */
import { KubeTransportError } from "../kube/errors.ts";
import { KubeApiError } from "../kube/status.ts";
import type { Logger } from "../log.ts";
import type { Clock } from "./clock.ts";
import type { Note, Step } from "./machine.ts";
import type { ReflectorMetrics } from "./metrics.ts";
import type { KubeObject, ResourceRef } from "./types.ts";

/** Contact with the API server: healthy, or not with the last failure. */
export interface ReflectorHealth {
  healthy: boolean;
  reason?: string;
  /** ms since epoch of the last change of `healthy`. */
  since: number;
}

/** Renders one reflector's steps as counters, health and log lines. */
export class ReflectorReport {
  readonly #metrics: ReflectorMetrics;
  readonly #log: Logger;
  readonly #clock: Clock;
  readonly #resource: ResourceRef;
  readonly #namespace: string | undefined;
  readonly #idleTimeoutMs: number;
  #health: ReflectorHealth;

  constructor(o: { metrics: ReflectorMetrics; log: Logger; clock: Clock; resource: ResourceRef; namespace: string | undefined; idleTimeoutMs: number }) {
    this.#metrics = o.metrics;
    this.#log = o.log;
    this.#clock = o.clock;
    this.#resource = o.resource;
    this.#namespace = o.namespace;
    this.#idleTimeoutMs = o.idleTimeoutMs;
    this.#health = { healthy: false, reason: "not started", since: o.clock.now() };
  }

  get health(): ReflectorHealth {
    return this.#health;
  }

  /** Renders what a step decided; `delayMs` is the wait the driver chose after it. */
  note<T extends KubeObject>(note: Note, s: Step<T>, delayMs: number): void {
    const m = this.#metrics;
    const resourceVersion = s.state.kind === "watching" ? s.state.resourceVersion : undefined;
    switch (note.kind) {
      case "failure":
        this.#failed(note.error, note.what, delayMs, resourceVersion);
        break;
      case "reconnect":
        m.reconnects[note.cause]++;
        break;
      case "expired":
        m.expired++;
        this.#log.info("resourceVersion expired, relisting", { resourceVersion: note.resourceVersion, message: note.error.message });
        break;
      case "continue-expired":
        m.expired++;
        this.#log.info("continue token expired during list, retrying with one full list");
        break;
      case "fallback":
        if (note.reason === "deadline") this.#log.warn("streaming list did not finish in time, falling back to paginated list");
        else {
          const e = note.error instanceof KubeApiError ? note.error : undefined;
          this.#log.info("streaming list not available, falling back to paginated list", { code: e?.code, reason: e?.reason });
        }
        break;
      case "relist-after-errors":
        this.#log.warn("repeated watch errors, relisting", { errors: note.errors });
        break;
      case "synced":
        m.lists++;
        if (note.streaming) m.streamingLists++;
        else this.healthy();
        if (note.phase === "resync") m.relists++;
        this.#log.info(note.phase === "initial" ? "initial sync done" : "resynced", {
          objects: note.objects,
          resourceVersion,
          ...(note.cause ? { cause: note.cause } : {}),
        });
        break;
      case "idle-reconnect":
        // Debug, not info: on a quiet resource without bookmarks this happens every idle period.
        // Health already turned unhealthy when the timer fired, until the next watch is answered.
        this.#log.debug("no data within the idle timeout, reconnecting", { idleTimeoutMs: this.#idleTimeoutMs, resourceVersion: note.resourceVersion });
        break;
      case "ended":
        this.#log.debug("watch ended cleanly, resuming", { resourceVersion: note.resourceVersion });
        break;
      case "unknown-type":
        this.#log.warn("unknown watch event type skipped", { type: note.wireType }); // W3
        break;
    }
  }

  /** In contact: a list completed or a watch was answered with 200. */
  healthy(): void {
    if (!this.#health.healthy) this.#health = { healthy: true, since: this.#clock.now() };
  }

  /** Out of contact, for `reason` (a failure, or one of the connection's own timers firing). */
  unhealthy(reason: string): void {
    this.#health = { healthy: false, reason, since: this.#clock.now() };
  }

  /** Counts and logs a failure; the driver then waits `delayMs` (backoff or Retry-After). */
  #failed(error: unknown, what: string, delayMs: number, resourceVersion: string | undefined): void {
    this.#metrics.failures++;
    this.unhealthy(`${what}: ${error instanceof Error ? error.message : String(error)}`);
    const fields = { ...describeError(error), retryInMs: Math.round(delayMs), resourceVersion };
    if (error instanceof KubeApiError && (error.code === 403 || error.code === 401)) {
      // Permission problems need a person, not a retry: say exactly what is missing.
      this.#log.error(`${what}: ${error.code === 403 ? "forbidden" : "unauthorized"}`, { ...fields, hint: this.#permissionHint(error.code) });
    } else {
      this.#log.warn(what, fields);
    }
  }

  #permissionHint(code: number): string {
    const { group, plural } = this.#resource;
    const resource = group ? `${plural}.${group}` : plural;
    const scope = this.#namespace ? `in namespace "${this.#namespace}"` : "cluster-wide (all namespaces)";
    return code === 403
      ? `appwatch needs the verbs get, list and watch on ${resource} ${scope}; grant them with a Role and RoleBinding like deploy/rbac.yaml`
      : "the API server rejected the credentials; check the token, token file or exec plugin of the kubeconfig user";
  }
}

function describeError(error: unknown): Record<string, unknown> {
  if (error instanceof KubeApiError) {
    return { error: error.message, code: error.code, reason: error.reason };
  }
  // Its message already names the URL and the system error; the runtime's "fetch failed" adds nothing.
  if (error instanceof KubeTransportError) return { error: error.message, code: error.code };
  if (error instanceof Error) {
    const cause = (error as { cause?: unknown }).cause;
    const detail = cause instanceof Error ? `: ${cause.message}` : "";
    return { error: `${error.name}: ${error.message}${detail}` };
  }
  return { error: String(error) };
}
