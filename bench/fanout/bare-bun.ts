/**
 * B3 limit on Bun: a bare broadcast server — `Bun.serve` with a topic per filter
 * (`ws.subscribe`) and `server.publish`, which encodes a frame once and writes it to every
 * subscriber natively; no appwatch code, no Hono. Compression off, and the ping, idle and
 * backpressure settings of appwatch's Bun adapter (30 s pings → idleTimeout 60 s, 16 MiB) so that
 * both keep their peers alike. Started by `bench/fanout/fanout.ts --bare`: `bun bench/fanout/bare-bun.ts`.
 * Protocol: `../lib/bare-common.ts`.
 * @module
 */
import { control, frames, topicOf } from "../lib/bare-common.ts";

/** The part of Bun's API used here (the repo's `tsc` run has no Bun types). */
interface BunSocket {
  data: { topic: string };
  subscribe(topic: string): void;
  send(data: string): number;
}
interface BunServer {
  port: number;
  upgrade(req: Request, options: { data: { topic: string } }): boolean;
  publish(topic: string, data: string): number;
}
interface BunLike {
  serve(options: {
    port: number;
    hostname: string;
    fetch(req: Request, server: BunServer): Response | undefined;
    websocket: {
      open(ws: BunSocket): void;
      close(ws: BunSocket): void;
      message(ws: BunSocket, data: unknown): void;
      perMessageDeflate: boolean;
      backpressureLimit: number;
      closeOnBackpressureLimit: boolean;
      idleTimeout: number;
      sendPings: boolean;
    };
  }): BunServer;
}
const Bun = (globalThis as unknown as { Bun: BunLike }).Bun;

let open = 0;
const server = Bun.serve({
  port: 0,
  hostname: "127.0.0.1",
  fetch(req, srv) {
    if (new URL(req.url).pathname === "/v1/watch" && srv.upgrade(req, { data: { topic: topicOf(req.url) } })) return undefined;
    return new Response(null, { status: 404 });
  },
  websocket: {
    open(ws) {
      open++;
      ws.subscribe(ws.data.topic);
      ws.send(frames.start);
    },
    close() {
      open--;
    },
    message() {},
    perMessageDeflate: false,
    backpressureLimit: 16 << 20,
    closeOnBackpressureLimit: false,
    idleTimeout: 60,
    sendPings: true,
  },
});

await control({
  url: `ws://127.0.0.1:${server.port}`,
  sockets: () => open,
  publish(topic, frame) {
    server.publish(topic, frame);
  },
});
