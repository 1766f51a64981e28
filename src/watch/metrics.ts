/**
 * Counters a reflector keeps for the metrics endpoint. Plain numbers, so any
 * exporter (Prometheus text, JSON) can render them.
 * @module
 */

/** Why a watch connection was re-established. */
export type ReconnectCause =
  | "timeout" // clean end of stream (server timeoutSeconds)
  | "idle" // no bytes within the inactivity budget (half-open connection)
  | "network" // connection error or cut mid-stream
  | "decode" // malformed line
  | "error-event" // non-410 ERROR event
  | "http-error" // non-2xx answer to the watch request
  | "expired"; // 410: followed by a relist

/** Counters of one reflector. */
export interface ReflectorMetrics {
  /** Complete list operations (paginated or streaming). */
  lists: number;
  /** List pages fetched. */
  listPages: number;
  /** Streaming-list syncs completed. */
  streamingLists: number;
  /** Watch requests sent. */
  watches: number;
  /** 410 Expired/Gone answers (in-stream or HTTP), on watch and list. */
  expired: number;
  /** Lists after the first one. */
  relists: number;
  reconnects: Record<ReconnectCause, number>;
  /** Bytes of list and watch bodies read. */
  bytes: number;
  /** Raw watch events by wire type. */
  events: { added: number; modified: number; deleted: number; bookmark: number; error: number; unknown: number };
  /** Events emitted to consumers. */
  emitted: { added: number; modified: number; deleted: number; inferredDeleted: number; synced: number };
  decodeErrors: number;
  /** Failed requests (any verb) that led to a backoff. */
  failures: number;
  lastResourceVersion: string;
  /** ms since epoch of the last watch event (0 = never). */
  lastEventTime: number;
}

/** A zeroed counter set. */
export function newReflectorMetrics(): ReflectorMetrics {
  return {
    lists: 0,
    listPages: 0,
    streamingLists: 0,
    watches: 0,
    expired: 0,
    relists: 0,
    reconnects: { timeout: 0, idle: 0, network: 0, decode: 0, "error-event": 0, "http-error": 0, expired: 0 },
    bytes: 0,
    events: { added: 0, modified: 0, deleted: 0, bookmark: 0, error: 0, unknown: 0 },
    emitted: { added: 0, modified: 0, deleted: 0, inferredDeleted: 0, synced: 0 },
    decodeErrors: 0,
    failures: 0,
    lastResourceVersion: "",
    lastEventTime: 0,
  };
}
