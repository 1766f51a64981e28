/**
 * Binary request bodies checked before connect-es reads them. connect-es answers an undecodable
 * binary message with `internal` ("parse binary: …", the code it also uses for its own failures),
 * while it answers undecodable JSON with `invalid_argument`; a client's bad bytes are a bad
 * argument either way. A bad body is swapped for an empty message and the rejection handed to the
 * handler's interceptor, so connect-es still writes the error in the request's own protocol
 * (unary JSON, end-stream frame, gRPC-Web trailers).
 * @module
 */
import { concatBytes } from "../../bytes.ts";
import { type DescMessage, fromBinary } from "@bufbuild/protobuf";
import { base64Decode } from "@bufbuild/protobuf/wire";
import { Code, ConnectError } from "@connectrpc/connect";

/** Content types whose body is one protobuf message (unary Connect) or enveloped ones (streams, gRPC-Web). */
function binaryKind(contentType: string | null): "unary" | "enveloped" | undefined {
  const type = (contentType ?? "").split(";")[0]!.trim().toLowerCase();
  if (type === "application/proto") return "unary";
  if (type === "application/connect+proto" || type === "application/grpc-web" || type === "application/grpc-web+proto") return "enveloped";
  return undefined;
}

/** What was wrong with a body, or undefined when connect-es may read it as it is. */
function problemOf(kind: "unary" | "enveloped", bytes: Uint8Array, schema: DescMessage): string | undefined {
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
    if (flags & 0x01) return undefined; // compressed: connect-es decompresses (or refuses) it itself
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
  const kind = binaryKind(request.headers.get("content-type"));
  if (kind === undefined || request.method !== "POST" || request.body === null) return { request };
  // Room for a few envelope headers; a longer body is refused like connect-es's read limit would.
  const bytes = await readUpTo(request.body, maxMessageBytes + 64);
  const headers = new Headers(request.headers);
  headers.delete("content-length");
  const rebuilt = (body: Uint8Array) => new Request(request.url, { method: "POST", headers, body: body as BodyInit, signal: request.signal });
  const empty = kind === "unary" ? new Uint8Array(0) : new Uint8Array(5);
  if (bytes === undefined) {
    return { request: rebuilt(empty), rejection: new ConnectError(`message is larger than configured readMaxBytes ${maxMessageBytes}`, Code.ResourceExhausted) };
  }
  const problem = problemOf(kind, bytes, schema);
  if (problem === undefined) return { request: rebuilt(bytes) };
  return { request: rebuilt(empty), rejection: new ConnectError(problem, Code.InvalidArgument) };
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
