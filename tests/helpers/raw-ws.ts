/**
 * A WebSocket client on a raw TCP socket (node:net, on Deno, Bun and Node):
 * the handshake by hand with any headers, minimal parsing of the server's
 * (unmasked) frames, and the socket itself at hand — so a test can stop
 * reading (`pause()`) and let the server's send buffer fill, like a stalled
 * peer on a slow network.
 */
import { Buffer } from "node:buffer";
import { randomBytes } from "node:crypto";
import net from "node:net";
import { waitFor } from "./run.ts";

/** One server frame. */
export interface RawFrame {
  opcode: number;
  payload: Buffer;
}

/** The answer to a handshake that was not upgraded. */
export interface RawHttpAnswer {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/** A connected raw WebSocket. */
export class RawWebSocket {
  readonly socket: net.Socket;
  /** Text messages (complete, after reassembling fragments). */
  onText: ((text: string) => void) | undefined;
  /** The close frame's code and reason, once received. */
  closeFrame: { code: number; reason: string } | undefined;
  /** True once the TCP connection ended. */
  ended = false;
  /** Answer the server's pings (a real client's behaviour); false simulates a dead peer. */
  answerPings = true;
  /** Pings received. */
  pings = 0;
  /** Bytes of WebSocket frames received (headers included). */
  bytes = 0;
  texts = 0;
  #buf: Buffer;
  #fragments: Buffer[] = [];
  #fragmentOpcode = 0;

  constructor(socket: net.Socket, rest: Buffer, onText?: (text: string) => void) {
    this.socket = socket;
    this.onText = onText;
    this.#buf = rest;
    socket.on("data", (chunk: Buffer) => {
      this.bytes += chunk.length;
      this.#buf = this.#buf.length ? Buffer.concat([this.#buf, chunk]) : chunk;
      this.#parse();
    });
    socket.on("close", () => (this.ended = true));
    socket.on("error", () => {});
    this.bytes += rest.length;
    queueMicrotask(() => this.#parse());
  }

  /** Stops reading from the socket (the kernel buffers fill, then the server's). */
  pause(): void {
    this.socket.pause();
  }

  resume(): void {
    this.socket.resume();
  }

  /** Sends a masked frame (a client must mask). */
  send(data: string | Uint8Array, opcode = typeof data === "string" ? 1 : 2): void {
    const payload = typeof data === "string" ? Buffer.from(data, "utf8") : Buffer.from(data);
    const mask = randomBytes(4);
    const len = payload.length;
    const head = len < 126 ? Buffer.alloc(2) : len < 65536 ? Buffer.alloc(4) : Buffer.alloc(10);
    head[0] = 0x80 | opcode;
    if (len < 126) head[1] = 0x80 | len;
    else if (len < 65536) {
      head[1] = 0x80 | 126;
      head.writeUInt16BE(len, 2);
    } else {
      head[1] = 0x80 | 127;
      head.writeBigUInt64BE(BigInt(len), 2);
    }
    const masked = Buffer.alloc(len);
    for (let i = 0; i < len; i++) masked[i] = payload[i]! ^ mask[i & 3]!;
    this.socket.write(Buffer.concat([head, mask, masked]));
  }

  /** Sends a close frame and ends the connection. */
  close(code = 1000): void {
    const b = Buffer.alloc(2);
    b.writeUInt16BE(code, 0);
    try {
      this.send(b, 8);
    } catch { /* gone */ }
    this.socket.end();
  }

  /** Drops the TCP connection at once. */
  destroy(): void {
    this.socket.destroy();
  }

  /** Waits until the server's close frame (or the end of the connection). */
  async closed(timeoutMs = 20_000): Promise<{ code: number; reason: string } | undefined> {
    await waitFor(() => this.closeFrame !== undefined || this.ended, "the raw WebSocket to close", timeoutMs);
    return this.closeFrame;
  }

  #parse(): void {
    for (;;) {
      const b = this.#buf;
      if (b.length < 2) return;
      const fin = (b[0]! & 0x80) !== 0;
      const opcode = b[0]! & 0x0f;
      const masked = (b[1]! & 0x80) !== 0;
      let len = b[1]! & 0x7f;
      let off = 2;
      if (len === 126) {
        if (b.length < 4) return;
        len = b.readUInt16BE(2);
        off = 4;
      } else if (len === 127) {
        if (b.length < 10) return;
        len = Number(b.readBigUInt64BE(2));
        off = 10;
      }
      if (masked) off += 4; // servers must not mask; tolerate it anyway
      if (b.length < off + len) return;
      let payload = b.subarray(off, off + len);
      if (masked) {
        const key = b.subarray(off - 4, off);
        payload = Buffer.from(payload.map((x, i) => x ^ key[i & 3]!));
      }
      this.#buf = b.subarray(off + len);
      this.#frame({ opcode, payload: Buffer.from(payload) }, fin);
    }
  }

  #frame(f: RawFrame, fin: boolean): void {
    if (f.opcode === 9) {
      // ping → pong with the same payload
      this.pings++;
      if (this.answerPings && !this.socket.destroyed) this.send(f.payload, 10);
      return;
    }
    if (f.opcode === 10) return;
    if (f.opcode === 8) {
      const code = f.payload.length >= 2 ? f.payload.readUInt16BE(0) : 1005;
      this.closeFrame = { code, reason: f.payload.subarray(2).toString("utf8") };
      // Answer the closing handshake, then end our side.
      if (!this.socket.destroyed) this.close(code === 1005 ? 1000 : code);
      return;
    }
    if (f.opcode === 0) {
      this.#fragments.push(f.payload);
      if (!fin) return;
      const whole = Buffer.concat(this.#fragments);
      this.#fragments = [];
      if (this.#fragmentOpcode === 1) this.#text(whole);
      return;
    }
    if (!fin) {
      this.#fragmentOpcode = f.opcode;
      this.#fragments = [f.payload];
      return;
    }
    if (f.opcode === 1) this.#text(f.payload);
  }

  #text(payload: Buffer): void {
    this.texts++;
    this.onText?.(payload.toString("utf8"));
  }
}

/**
 * Opens `url` (http:// or ws://) with a hand-made upgrade request. Resolves a
 * {@link RawWebSocket} on 101, else the HTTP answer (status, headers, body).
 */
export function rawConnect(
  url: string,
  options: { headers?: Record<string, string>; onText?: (text: string) => void } = {},
): Promise<RawWebSocket | RawHttpAnswer> {
  const u = new URL(url.replace(/^ws/, "http"));
  return new Promise((resolve, reject) => {
    const socket = net.connect({ host: u.hostname, port: Number(u.port) });
    let buf = Buffer.alloc(0);
    let done = false;
    const fail = (err: Error) => {
      if (done) return;
      done = true;
      socket.destroy();
      reject(err);
    };
    socket.once("error", fail);
    socket.once("connect", () => {
      const key = randomBytes(16).toString("base64");
      const headers: Record<string, string> = {
        Host: u.host,
        Upgrade: "websocket",
        Connection: "Upgrade",
        "Sec-WebSocket-Key": key,
        "Sec-WebSocket-Version": "13",
        ...options.headers,
      };
      socket.write(`GET ${u.pathname}${u.search} HTTP/1.1\r\n${Object.entries(headers).map(([k, v]) => `${k}: ${v}\r\n`).join("")}\r\n`);
    });
    const onData = (chunk: Buffer) => {
      buf = Buffer.concat([buf, chunk]);
      const end = buf.indexOf("\r\n\r\n");
      if (end < 0) return;
      const head = buf.subarray(0, end).toString("latin1").split("\r\n");
      const status = Number(head[0]!.split(" ")[1]);
      const hdrs: Record<string, string> = {};
      for (const line of head.slice(1)) {
        const i = line.indexOf(":");
        if (i > 0) hdrs[line.slice(0, i).trim().toLowerCase()] = line.slice(i + 1).trim();
      }
      const rest = buf.subarray(end + 4);
      if (status === 101) {
        done = true;
        socket.off("data", onData);
        socket.off("error", fail);
        resolve(new RawWebSocket(socket, Buffer.from(rest), options.onText));
        return;
      }
      // Not upgraded: read the body (content-length, chunked, or until close).
      socket.off("data", onData);
      let body = Buffer.from(rest);
      const finish = () => {
        if (done) return;
        done = true;
        socket.destroy();
        resolve({ status, headers: hdrs, body: decodeBody(body, hdrs) });
      };
      const length = hdrs["content-length"] !== undefined ? Number(hdrs["content-length"]) : undefined;
      const complete = () =>
        length !== undefined ? body.length >= length : hdrs["transfer-encoding"]?.includes("chunked") ? body.includes("\r\n0\r\n\r\n") || body.subarray(0, 3).toString() === "0\r\n" : false;
      if (complete()) return finish();
      socket.on("data", (c: Buffer) => {
        body = Buffer.concat([body, c]);
        if (complete()) finish();
      });
      socket.once("end", finish);
      socket.once("close", finish);
    };
    socket.on("data", onData);
  });
}

function decodeBody(body: Buffer, headers: Record<string, string>): string {
  if (!headers["transfer-encoding"]?.includes("chunked")) return body.toString("utf8");
  const out: Buffer[] = [];
  let i = 0;
  for (;;) {
    const nl = body.indexOf("\r\n", i);
    if (nl < 0) break;
    const size = parseInt(body.subarray(i, nl).toString("latin1"), 16);
    if (!(size > 0)) break;
    out.push(body.subarray(nl + 2, nl + 2 + size));
    i = nl + 2 + size + 2;
  }
  return Buffer.concat(out).toString("utf8");
}

/** Narrows a {@link rawConnect} result to an upgraded socket (throws with the HTTP answer otherwise). */
export function upgraded(r: RawWebSocket | RawHttpAnswer): RawWebSocket {
  if (r instanceof RawWebSocket) return r;
  throw new Error(`expected a WebSocket upgrade, got HTTP ${r.status}: ${r.body}`);
}

/** Narrows a {@link rawConnect} result to a refused upgrade. */
export function refused(r: RawWebSocket | RawHttpAnswer): RawHttpAnswer {
  if (r instanceof RawWebSocket) {
    r.destroy();
    throw new Error("expected the upgrade to be refused, but it was accepted");
  }
  return r;
}
