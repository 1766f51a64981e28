/**
 * One HTTP/1.1 request over a raw TCP connection, so no client normalises or validates what is
 * sent (request targets, methods, heads), and its answer as the server wrote it.
 * @module
 */
import { Buffer } from "node:buffer";
import net from "node:net";

/** A whole HTTP answer read off a raw socket, or the 101 of an upgrade. */
export interface RawAnswer {
  status: number;
  /** Lower-cased names. */
  headers: Record<string, string>;
  body: string;
  /** The body arrived whole: its Content-Length, the chunked terminator, or up to the server's close. */
  complete: boolean;
  socket: net.Socket;
}

/**
 * Sends `head` (a request, possibly with a body) on a new connection and reads the answer: up to
 * the end of the body it announces (not waiting for a keep-alive connection to close), or up to
 * the server's close. `onWritten` may act on the socket before any answer (e.g. destroy it).
 * Undefined when the connection closes, or `timeoutMs` passes, before a whole head arrives.
 */
export function rawRequest(url: string, head: string, options: { onWritten?: (socket: net.Socket) => void; timeoutMs?: number } = {}): Promise<RawAnswer | undefined> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve) => {
    const socket = net.connect({ host: hostname, port: Number(port) }, () => {
      socket.write(head);
      options.onWritten?.(socket);
    });
    let buf = Buffer.alloc(0);
    let settled = false;
    const timer = options.timeoutMs === undefined ? undefined : setTimeout(() => {
      socket.destroy();
      settle(undefined);
    }, options.timeoutMs);
    const settle = (a: RawAnswer | undefined) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve(a);
    };
    const parse = (closed: boolean) => {
      const end = buf.indexOf("\r\n\r\n");
      if (end < 0) return closed ? settle(undefined) : undefined;
      const lines = buf.subarray(0, end).toString("latin1").split("\r\n");
      const headers: Record<string, string> = {};
      for (const line of lines.slice(1)) {
        const i = line.indexOf(":");
        if (i > 0) headers[line.slice(0, i).trim().toLowerCase()] = line.slice(i + 1).trim();
      }
      const status = Number(lines[0]!.split(" ")[1]);
      const rest = buf.subarray(end + 4);
      const base = { status, headers, socket };
      if (status === 101) return settle({ ...base, body: "", complete: true });
      const length = headers["content-length"];
      if (length !== undefined) {
        if (rest.length >= Number(length)) return settle({ ...base, body: rest.subarray(0, Number(length)).toString("utf8"), complete: true });
      } else if (headers["transfer-encoding"]?.includes("chunked")) {
        const body = dechunk(rest);
        if (body !== undefined) return settle({ ...base, body, complete: true });
      } else if (closed) {
        return settle({ ...base, body: rest.toString("utf8"), complete: true });
      }
      if (closed) settle({ ...base, body: rest.toString("utf8"), complete: false });
    };
    socket.on("data", (chunk: Buffer) => {
      buf = Buffer.concat([buf, chunk]);
      parse(false);
    });
    socket.on("error", () => {});
    socket.on("close", () => parse(true));
  });
}

/** A complete chunked body, or undefined while its last chunk has not arrived. */
function dechunk(b: Buffer): string | undefined {
  const out: Buffer[] = [];
  let i = 0;
  for (;;) {
    const nl = b.indexOf("\r\n", i);
    if (nl < 0) return undefined;
    const size = parseInt(b.subarray(i, nl).toString("latin1"), 16);
    if (Number.isNaN(size)) return undefined;
    if (size === 0) return Buffer.concat(out).toString("utf8");
    if (b.length < nl + 2 + size + 2) return undefined;
    out.push(b.subarray(nl + 2, nl + 2 + size));
    i = nl + 2 + size + 2;
  }
}
