/**
 * Decoding what the API server sends into what the state machine reads: a watch line into a
 * {@link WatchEvent}, a list item or event object into the consumer's `T` (via its `parse`).
 * Counts each line by wire type; a malformed line is a decode failure (an {@link NdjsonError}),
 * an object that is not a Kubernetes object or that `parse` rejects is skipped with a warning.
 * @module
 */
import * as v from "valibot";
import { errorFromStatus } from "../kube/status.ts";
import type { Logger } from "../log.ts";
import type { WatchEvent } from "./machine.ts";
import type { ReflectorMetrics } from "./metrics.ts";
import { NdjsonError } from "./ndjson.ts";
import { INITIAL_EVENTS_END_ANNOTATION, isKubeObject, isRawWatchEvent, type KubeObject, objectKey, RawWatchEventSchema } from "./types.ts";

/** One collection's decoder. */
export class WatchDecoder<T extends KubeObject> {
  readonly #metrics: ReflectorMetrics;
  readonly #log: Logger;
  readonly #parse: ((obj: KubeObject) => T) | undefined;
  /** The request named in in-stream errors. */
  readonly #request: string;

  constructor(o: { metrics: ReflectorMetrics; log: Logger; parse: ((obj: KubeObject) => T) | undefined; path: string }) {
    this.#metrics = o.metrics;
    this.#log = o.log;
    this.#parse = o.parse;
    this.#request = `GET ${o.path}?watch`;
  }

  /** Watch line number `line` as a {@link WatchEvent}; a malformed line throws. */
  event(raw: unknown, line: number): WatchEvent<T> {
    if (!isRawWatchEvent(raw)) {
      const issues = v.safeParse(RawWatchEventSchema, raw);
      const why = issues.success ? "unexpected shape" : v.summarize(issues.issues);
      throw new NdjsonError("malformed-json", line, JSON.stringify(raw).slice(0, 200), `not a watch event: ${why}`);
    }
    const { type, object } = raw;
    const counts = this.#metrics.events;
    switch (type) {
      case "ADDED":
      case "MODIFIED":
      case "DELETED": {
        counts[type === "ADDED" ? "added" : type === "MODIFIED" ? "modified" : "deleted"]++;
        const obj = this.object(object);
        if (!obj) {
          throw new NdjsonError("malformed-json", line, JSON.stringify(object).slice(0, 200), "watch event object is not a valid Kubernetes object");
        }
        return { type, object: obj };
      }
      case "BOOKMARK":
        counts.bookmark++;
        // B1: a bookmark need carry nothing but metadata.resourceVersion.
        return {
          type,
          resourceVersion: object.metadata?.resourceVersion,
          end: object.metadata?.annotations?.[INITIAL_EVENTS_END_ANNOTATION] === "true",
        };
      case "ERROR":
        counts.error++;
        return { type, error: errorFromStatus(object, { code: 500, source: "in-stream", request: this.#request }) };
      default:
        counts.unknown++;
        return { type: "unknown", wireType: type };
    }
  }

  /** A list item or event object as `T`; undefined (with a warning) when it is not one. */
  object(raw: unknown): T | undefined {
    if (!isKubeObject(raw)) {
      this.#log.warn("skipping invalid object", { excerpt: JSON.stringify(raw)?.slice(0, 200) });
      return undefined;
    }
    if (!this.#parse) return raw as T;
    try {
      return this.#parse(raw);
    } catch (err) {
      this.#log.warn("object rejected by parse()", { key: objectKey(raw), error: (err as Error).message });
      return undefined;
    }
  }
}
