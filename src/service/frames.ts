/**
 * The frames appwatch streams to WebSocket and SSE clients (docs/protocol.md).
 * Every frame is one JSON object. Event frames are Flyte `WatchResponse` JSON
 * plus an optional `resume` token; control frames have one other top-level key.
 * An event's JSON is built once and shared by every subscriber that gets it.
 * @module
 */
import { watchEventKind, type WatchResponse } from "../flyte/model.ts";
import type { SubscriptionStart } from "../flyte/subscriptions.ts";

/** What a stream delivers, whatever the transport. */
export type SessionItem =
  | { kind: "start"; start: SubscriptionStart; snapshotSize: number; position: string; sandbox?: boolean }
  | { kind: "event"; event: WatchResponse; token?: string }
  | { kind: "synced"; token: string; after: "snapshot" | "resume" | "resync" }
  | { kind: "heartbeat"; token?: string }
  | { kind: "error"; code: string; message: string };

/** The kind of a frame (the SSE `event:` name). */
export type FrameKind = "createEvent" | "updateEvent" | "deleteEvent" | "start" | "synced" | "heartbeat" | "pong" | "error";

/** One serialized frame. */
export interface Frame {
  kind: FrameKind;
  json: string;
  /** The resume token this frame carries (SSE `id:`). */
  token?: string;
}

const eventJson = new WeakMap<WatchResponse, string>();

/** `WatchResponse` → its JSON, computed once per event object. */
export function watchResponseJson(event: WatchResponse): string {
  let json = eventJson.get(event);
  if (json === undefined) {
    json = JSON.stringify(event);
    eventJson.set(event, json);
  }
  return json;
}

/** The last tokened frame built per event: every subscriber that gets the event live shares it. */
const tokenFrames = new WeakMap<WatchResponse, Frame>();

/**
 * An event frame: the `WatchResponse` JSON with `"resume"` appended when a token is known.
 * Built once per (event, token), not once per subscriber: live subscribers of one change get
 * the same token, so they share one frame (frames are never mutated).
 */
export function eventFrame(event: WatchResponse, token: string | undefined): Frame {
  if (token !== undefined) {
    const cached = tokenFrames.get(event);
    if (cached !== undefined && cached.token === token) return cached;
  }
  const kind: FrameKind = watchEventKind(event);
  const json = watchResponseJson(event);
  if (token === undefined) return { kind, json };
  const frame: Frame = { kind, json: `${json.slice(0, -1)},"resume":${JSON.stringify(token)}}`, token };
  tokenFrames.set(event, frame);
  return frame;
}

/** The first frame of every stream: how it starts, and (`sandbox: true`) that the data is the sandbox's demo apps. */
export function startFrame(start: SubscriptionStart, snapshotSize: number, sandbox = false): Frame {
  const body: Record<string, unknown> = { mode: start.kind };
  if (start.kind === "snapshot") {
    body.apps = snapshotSize;
    if (start.resumeFailed) body.resumeFailed = start.resumeFailed;
  }
  if (start.kind === "resumed") body.replayed = start.replayed;
  // Only when true, like resumeFailed: a real cluster's start frame is what it always was.
  if (sandbox) body.sandbox = true;
  return { kind: "start", json: JSON.stringify({ start: body }) };
}

/** After the snapshot, a replay, or a relist: the client holds a consistent state as of `token`. */
export function syncedFrame(token: string, after: "snapshot" | "resume" | "resync"): Frame {
  return { kind: "synced", json: JSON.stringify({ synced: { resume: token, after } }), token };
}

/** Periodic: the connection is alive; `token` (when known) resumes after everything sent so far. */
export function heartbeatFrame(token: string | undefined, now = new Date()): Frame {
  const body: Record<string, unknown> = { time: now.toISOString() };
  if (token !== undefined) body.resume = token;
  return token === undefined
    ? { kind: "heartbeat", json: JSON.stringify({ heartbeat: body }) }
    : { kind: "heartbeat", json: JSON.stringify({ heartbeat: body }), token };
}

/** Answer to a client `{"ping":{…}}`. */
export function pongFrame(id: string | undefined): Frame {
  return { kind: "pong", json: JSON.stringify({ pong: id === undefined ? {} : { id } }) };
}

/** Sent right before the server ends a stream for a reason the client should know. */
export function errorFrame(code: string, message: string): Frame {
  return { kind: "error", json: JSON.stringify({ error: { code, message } }) };
}

/** A session item as the frame WebSocket and SSE clients get. */
export function frameOf(item: SessionItem): Frame {
  switch (item.kind) {
    case "start":
      return startFrame(item.start, item.snapshotSize, item.sandbox === true);
    case "event":
      return eventFrame(item.event, item.token);
    case "synced":
      return syncedFrame(item.token, item.after);
    case "heartbeat":
      return heartbeatFrame(item.token);
    case "error":
      return errorFrame(item.code, item.message);
  }
}
