/**
 * A TCP fault proxy on loopback, between a client and a real server: it can
 * cut every open connection (RST-like destroy), stall them (stop forwarding
 * server→client bytes while keeping the sockets open: a half-open
 * connection), or drip the server's bytes a few at a time. Because it works
 * below TLS and HTTP, the faults look exactly like a broken network to the
 * client.
 */
import { createServer, type Server, type Socket, connect } from "node:net";

export interface TcpProxy {
  /** `127.0.0.1:<port>` of the proxy. */
  readonly host: string;
  readonly port: number;
  /** Destroys every open connection now. */
  cutAll(): number;
  /** While stalled, nothing from the server reaches the client (bytes are held, then dropped on cut). */
  stall(on: boolean): void;
  /** Forward server→client bytes in pieces of `bytes` every `everyMs` (undefined: full speed). */
  drip(options: { bytes: number; everyMs: number } | undefined): void;
  /** Connections currently open. */
  open(): number;
  /** Connections accepted so far. */
  readonly accepted: number;
  close(): Promise<void>;
}

interface Pair {
  client: Socket;
  upstream: Socket;
  held: Uint8Array[];
  timer: ReturnType<typeof setInterval> | undefined;
}

export async function startTcpProxy(target: { host: string; port: number }): Promise<TcpProxy> {
  const pairs = new Set<Pair>();
  let stalled = false;
  let dripping: { bytes: number; everyMs: number } | undefined;
  let accepted = 0;

  const flush = (p: Pair) => {
    if (stalled) return;
    if (!dripping) {
      for (const chunk of p.held.splice(0)) p.client.write(chunk);
      return;
    }
    let budget = dripping.bytes;
    while (budget > 0 && p.held.length > 0) {
      const head = p.held[0]!;
      if (head.length <= budget) {
        p.client.write(head);
        budget -= head.length;
        p.held.shift();
      } else {
        p.client.write(head.subarray(0, budget));
        p.held[0] = head.subarray(budget);
        budget = 0;
      }
    }
  };

  const server: Server = createServer((client) => {
    accepted++;
    const upstream = connect(target.port, target.host);
    const pair: Pair = { client, upstream, held: [], timer: undefined };
    pairs.add(pair);
    const end = () => {
      if (!pairs.delete(pair)) return;
      clearInterval(pair.timer);
      client.destroy();
      upstream.destroy();
    };
    client.on("data", (d: Uint8Array) => upstream.write(d));
    upstream.on("data", (d: Uint8Array) => {
      pair.held.push(d);
      if (!dripping) flush(pair);
    });
    pair.timer = setInterval(() => {
      if (dripping || !stalled) flush(pair);
    }, 5);
    client.on("close", end);
    upstream.on("close", end);
    client.on("error", end);
    upstream.on("error", end);
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => resolve());
  });
  const address = server.address();
  const port = typeof address === "object" && address ? address.port : 0;

  return {
    host: "127.0.0.1",
    port,
    get accepted() {
      return accepted;
    },
    cutAll() {
      const n = pairs.size;
      for (const p of [...pairs]) {
        pairs.delete(p);
        clearInterval(p.timer);
        p.client.resetAndDestroy?.();
        p.client.destroy();
        p.upstream.destroy();
      }
      return n;
    },
    stall(on) {
      stalled = on;
    },
    drip(options) {
      dripping = options;
      if (options) {
        for (const p of pairs) {
          clearInterval(p.timer);
          p.timer = setInterval(() => flush(p), options.everyMs);
        }
      }
    },
    open: () => pairs.size,
    close: () =>
      new Promise<void>((resolve) => {
        for (const p of [...pairs]) {
          clearInterval(p.timer);
          p.client.destroy();
          p.upstream.destroy();
        }
        pairs.clear();
        server.close(() => resolve());
      }),
  };
}
