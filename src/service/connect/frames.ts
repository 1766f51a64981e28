/**
 * The Connect protocol's server-stream frames for `AppService.Watch`, built once per event and
 * codec and shared by every subscriber.
 *
 * Why this exists: connect-es serializes every message it is given once per stream, so a Watch
 * event sent to 1,000 subscribers was turned into protobuf JSON (`toJsonString` of a ~5 KB App)
 * 1,000 times, inside connect-es's per-message async-iterable pipeline (envelope, compression
 * checks, one async generator per stage and stream). B6 (bench/results/B6.md, V8 profile at 1,000
 * changes/s × 1,000 subscribers) measured 27 % of the thread in that serialization and ~37 % in
 * the pipeline, and the stream backlogged. Here the enveloped bytes of each event are cached per
 * `WatchResponse` object (a WeakMap, like {@link watchMessage}), so every subscriber's stream
 * enqueues the same `Uint8Array`: a 5-byte envelope (flags 0, big-endian length) + the data.
 * Binary data is `toBinary(WatchResponseSchema, msg)`, connect-es's bytes. JSON data is the
 * event's own JSON, the string WebSocket and SSE frames share (`service/frames.ts`): an App is
 * already proto3 JSON (Flyte's, golden-checked), so going JSON → protobuf message → JSON again
 * (`fromJson` + `toJsonString`, ~5× a `JSON.stringify`, and most of the garbage of the B6 Deno
 * profile's long tasks) only re-orders keys. tests/service-connect-frames.test.ts checks that a
 * strict `fromJsonString` (no unknown fields) of the frame gives connect-es's message, and
 * tests/flyte-golden.test.ts that every golden App's JSON equals its `toJsonString` round trip.
 *
 * The end-stream frame (flags 0x02) uses connect-es's own end-stream serialization, so trailers
 * and error JSON are connect-es's.
 * @module
 */
import { fromJson, type JsonValue, type Message, toBinary } from "@bufbuild/protobuf";
import type { ConnectError } from "@connectrpc/connect";
import { createEndStreamSerialization, endStreamFlag } from "@connectrpc/connect/protocol-connect";
import type { WatchResponse } from "../../flyte/model.ts";
import { WatchResponseSchema } from "../../flyte/proto/app_service_pb.ts";
import { watchResponseJson } from "../frames.ts";

const watchMessages = new WeakMap<WatchResponse, Message>();

/** Our `WatchResponse` JSON → its protobuf-es message, built once per event and shared by every Connect subscriber. */
export function watchMessage(event: WatchResponse): Message {
  let msg = watchMessages.get(event);
  if (msg === undefined) {
    msg = fromJson(WatchResponseSchema, event as unknown as JsonValue, { ignoreUnknownFields: true });
    watchMessages.set(event, msg);
  }
  return msg;
}

const encoder = new TextEncoder();
const jsonFrames = new WeakMap<WatchResponse, Uint8Array>();
const binaryFrames = new WeakMap<WatchResponse, Uint8Array>();

/** `data` in a Connect envelope: 1 byte of flags, 4 bytes of big-endian length, the data. */
export function envelope(flags: number, data: Uint8Array): Uint8Array {
  const bytes = new Uint8Array(5 + data.byteLength);
  bytes[0] = flags;
  new DataView(bytes.buffer).setUint32(1, data.byteLength, false);
  bytes.set(data, 5);
  return bytes;
}

/** The enveloped message frame of `event` in JSON or binary protobuf, built once per event and codec. */
export function watchFrame(event: WatchResponse, binary: boolean): Uint8Array {
  const cache = binary ? binaryFrames : jsonFrames;
  let frame = cache.get(event);
  if (frame === undefined) {
    frame = envelope(0, binary ? toBinary(WatchResponseSchema, watchMessage(event) as never) : encoder.encode(watchResponseJson(event)));
    cache.set(event, frame);
  }
  return frame;
}

const endStream = createEndStreamSerialization(undefined);

/** The Connect end-stream frame: `{"error":…,"metadata":…}` as connect-es writes it. */
export function endStreamFrame(trailer: Headers, error: ConnectError | undefined): Uint8Array {
  return envelope(endStreamFlag, endStream.serialize(error ? { metadata: trailer, error } : { metadata: trailer }));
}
