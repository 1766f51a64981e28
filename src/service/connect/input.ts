/**
 * Binary request bodies checked before connect-es reads them, on the HTTP port (mount.ts) and on
 * `--grpc-port` (adapters/grpc.ts). connect-es answers an undecodable binary message with
 * `internal` ("parse binary: …", the code it also uses for its own failures), and an envelope
 * flagged compressed in a request that names no encoding with `internal` too, while it answers
 * undecodable JSON with `invalid_argument`; a client's bad bytes are a bad argument either way. A bad body is swapped for an empty message and the rejection handed to the
 * handler's interceptor, so connect-es still writes the error in the request's own protocol
 * (unary JSON, end-stream frame, gRPC-Web trailers).
 * @module
 */
import { concatBytes } from "../../bytes.ts";
import { type DescMessage, fromBinary } from "@bufbuild/protobuf";
import { base64Decode } from "@bufbuild/protobuf/wire";
import { Code, ConnectError } from "@connectrpc/connect";

/** Content types whose body is one protobuf message (unary Connect) or enveloped ones (streams, gRPC-Web, gRPC). */
function binaryKind(contentType: string | null): "unary" | "enveloped" | undefined {
  const type = (contentType ?? "").split(";")[0]!.trim().toLowerCase();
  if (type === "application/proto") return "unary";
  if (
    type === "application/connect+proto" || type === "application/grpc-web" || type === "application/grpc-web+proto" ||
    type === "application/grpc" || type === "application/grpc+proto"
  ) return "enveloped";
  return undefined;
}

/**
 * The message encoding an enveloped request names: `connect-content-encoding` for Connect
 * streams, `grpc-encoding` for gRPC and gRPC-Web (undefined: none, or `identity`).
 */
function envelopeEncoding(contentType: string | null, headers: Headers): string | undefined {
  const connect = (contentType ?? "").trim().toLowerCase().startsWith("application/connect+");
  const value = headers.get(connect ? "connect-content-encoding" : "grpc-encoding")?.trim().toLowerCase();
  return value === undefined || value === "" || value === "identity" ? undefined : value;
}

/** What was wrong with a body, or undefined when connect-es may read it as it is. */
function problemOf(kind: "unary" | "enveloped", bytes: Uint8Array, schema: DescMessage, encoding?: string): string | undefined {
  const decode = (message: Uint8Array): string | undefined => {
    try {
      fromBinary(schema, message);
      return undefined;
    } catch (err) {
      return `cannot decode message ${schema.typeName} from binary: ${err instanceof Error ? err.message : String(err)}`;
    }
  };
  if (kind === "unary") return decode(bytes);
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  for (let at = 0; at < bytes.byteLength;) {
    if (at + 5 > bytes.byteLength) return "the request body ends inside a message envelope's header";
    const flags = bytes[at]!;
    const length = view.getUint32(at + 1);
    if (at + 5 + length > bytes.byteLength) return `the request body ends inside a message envelope (${length} bytes announced)`;
    if (flags & 0x01) {
      // Compressed with a named encoding: connect-es decompresses (or refuses) it itself. Without
      // one there is nothing to decompress with: the client's mistake, not ours (connect-es says internal).
      if (encoding !== undefined) return undefined;
      return "a message envelope is flagged compressed, but the request names no message encoding";
    }
    if (flags === 0) {
      const problem = decode(bytes.subarray(at + 5, at + 5 + length));
      if (problem) return problem;
    }
    at += 5 + length;
  }
  return undefined;
}

/** Reads at most `limit` bytes of a body; undefined when it is longer. */
async function readUpTo(body: ReadableStream<Uint8Array>, limit: number): Promise<Uint8Array | undefined> {
  const reader = body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > limit) {
      await reader.cancel().catch(() => {});
      return undefined;
    }
    chunks.push(value);
  }
  return concatBytes(chunks, size);
}

/** Reads at most `limit` bytes of an async-iterable body (the gRPC listener's); undefined when it is longer. */
export async function readIterableUpTo(body: AsyncIterable<Uint8Array>, limit: number): Promise<Uint8Array | undefined> {
  const chunks: Uint8Array[] = [];
  let size = 0;
  for await (const chunk of body) {
    size += chunk.byteLength;
    if (size > limit) return undefined; // leaving the loop ends the iterator
    chunks.push(chunk);
  }
  return concatBytes(chunks, size);
}

/**
 * Checks a binary request body against `schema`. Returns the request to give connect-es (the same
 * bytes, or an empty message in the same framing) and the rejection its interceptor must throw.
 * Connect GET requests with `encoding=proto` are checked the same way (the message is in the
 * query); other requests (JSON) are returned untouched: connect-es already answers them well.
 */
export async function checkBinaryRequest(
  request: Request,
  schema: DescMessage,
  maxMessageBytes: number,
): Promise<{ request: Request; rejection?: ConnectError }> {
  if (request.method === "GET") return checkGetRequest(request, schema);
  const contentType = request.headers.get("content-type");
  if (binaryKind(contentType) === undefined || request.method !== "POST" || request.body === null) return { request };
  // Room for a few envelope headers; a longer body is refused like connect-es's read limit would.
  const checked = checkBinaryBody(contentType, request.headers, await readUpTo(request.body, maxMessageBytes + 64), schema, maxMessageBytes);
  const headers = new Headers(request.headers);
  headers.delete("content-length");
  return { request: new Request(request.url, { method: "POST", headers, body: checked.body as BodyInit, signal: request.signal }), ...checked.rejection ? { rejection: checked.rejection } : {} };
}

/**
 * The transport-neutral check (the HTTP port above, the gRPC listener's HTTP/2 bridge): the body
 * `bytes` (undefined: longer than the limit) of a request with these headers. Returns the body to
 * give connect-es (the same bytes, or an empty message in the same framing) and the rejection its
 * interceptor must throw; a content type that is not binary protobuf comes back untouched.
 */
export function checkBinaryBody(
  contentType: string | null,
  headers: Headers,
  bytes: Uint8Array | undefined,
  schema: DescMessage,
  maxMessageBytes: number,
): { body: Uint8Array; rejection?: ConnectError } {
  const kind = binaryKind(contentType);
  const unaryEncoding = headers.get("content-encoding")?.trim().toLowerCase();
  // A compressed unary body (Connect's Content-Encoding) is connect-es's to decompress, or refuse.
  const compressedUnary = kind === "unary" && unaryEncoding !== undefined && unaryEncoding !== "" && unaryEncoding !== "identity";
  if ((kind === undefined || compressedUnary) && bytes !== undefined) return { body: bytes };
  const empty = kind === "unary" ? new Uint8Array(0) : new Uint8Array(5);
  if (bytes === undefined) {
    return { body: empty, rejection: new ConnectError(`message is larger than configured readMaxBytes ${maxMessageBytes}`, Code.ResourceExhausted) };
  }
  const problem = problemOf(kind ?? "unary", bytes, schema, envelopeEncoding(contentType, headers));
  if (problem === undefined) return { body: bytes };
  return { body: empty, rejection: new ConnectError(problem, Code.InvalidArgument) };
}

/** Whether `contentType` is binary protobuf (the bodies {@link checkBinaryBody} checks). */
export function isBinaryContentType(contentType: string | null): boolean {
  return binaryKind(contentType) !== undefined;
}

/** Connect GET (`?connect=v1&encoding=proto&base64=1&message=…`): the message bytes as connect-es reads them. */
function checkGetRequest(request: Request, schema: DescMessage): { request: Request; rejection?: ConnectError } {
  const url = new URL(request.url);
  const q = url.searchParams;
  if (q.get("encoding") !== "proto" || q.has("compression")) return { request };
  const message = q.get("message") ?? "";
  let problem: string | undefined;
  try {
    const bytes = q.get("base64") === "1" ? base64Decode(message) : new TextEncoder().encode(message);
    problem = problemOf("unary", bytes, schema);
  } catch (err) {
    problem = `the message query parameter is not base64: ${err instanceof Error ? err.message : String(err)}`;
  }
  if (problem === undefined) return { request };
  q.set("message", "");
  q.delete("base64");
  return { request: new Request(url, { method: "GET", headers: request.headers, signal: request.signal }), rejection: new ConnectError(problem, Code.InvalidArgument) };
}
