/**
 * B3 limit on Deno: a bare broadcast server — `Deno.serve` + `Deno.upgradeWebSocket`, no appwatch
 * code, no Hono. Deno's `WebSocket.send` takes the string (bytes would make a binary frame).
 * `idleTimeout` is appwatch's default ping period (30 s) so that both keep their peers alike.
 * Started by `bench/fanout/fanout.ts --bare`: `deno run -A bench/fanout/bare-deno.ts`.
 * Protocol: `../lib/bare-common.ts`.
 * @module
 */
import { control, frames, Topics, topicOf } from "../lib/bare-common.ts";

/** The part of the Deno namespace used here (the repo's `tsc` run has no Deno types). */
interface DenoLike {
  serve(
    options: { port: number; hostname: string; onListen(addr: { port: number }): void },
    handler: (req: Request) => Response,
  ): unknown;
  upgradeWebSocket(req: Request, options: { idleTimeout: number }): { socket: WebSocket; response: Response };
}
const Deno = (globalThis as unknown as { Deno: DenoLike }).Deno;

const topics = new Topics<WebSocket>();
const port = await new Promise<number>((resolve) => {
  Deno.serve({ port: 0, hostname: "127.0.0.1", onListen: (addr) => resolve(addr.port) }, (req) => {
    const url = new URL(req.url);
    if (url.pathname !== "/v1/watch" || req.headers.get("upgrade")?.toLowerCase() !== "websocket") return new Response(null, { status: 404 });
    const topic = topicOf(req.url);
    const { socket, response } = Deno.upgradeWebSocket(req, { idleTimeout: 30 });
    socket.onopen = () => {
      topics.add(topic, socket);
      socket.send(frames.start);
    };
    // Deno can fire `close` twice (after a ping timeout); `delete` only counts a socket it had.
    socket.onclose = () => topics.delete(topic, socket);
    socket.onerror = () => undefined;
    return response;
  });
});

await control({
  url: `ws://127.0.0.1:${port}`,
  sockets: () => topics.size,
  publish(topic, frame) {
    const set = topics.get(topic);
    if (!set) return;
    for (const ws of set) if (ws.readyState === 1) ws.send(frame);
  },
});
