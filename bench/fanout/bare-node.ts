/**
 * B3 limit on Node: a bare broadcast server — `node:http` + the `ws` package (no compression), no
 * appwatch code, no Hono. Each frame is encoded to bytes once and the same `Buffer` is sent to
 * every socket as a text frame (the `ws` broadcast idiom), so what is measured is Node's own cost
 * per socket write. Started by `bench/fanout/fanout.ts --bare`:
 * `node --import tsx bench/fanout/bare-node.ts`. Protocol: `../lib/bare-common.ts`.
 * @module
 */
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { Buffer } from "node:buffer";
import { WebSocket, WebSocketServer } from "ws";
import { control, frames, Topics, topicOf } from "../lib/bare-common.ts";

const topics = new Topics<WebSocket>();
const http = createServer((_req, res) => res.writeHead(404).end());
const wss = new WebSocketServer({ server: http, path: "/v1/watch", perMessageDeflate: false });
wss.on("connection", (ws, req) => {
  const topic = topicOf(req.url ?? "/");
  topics.add(topic, ws);
  ws.on("close", () => topics.delete(topic, ws));
  ws.on("error", () => undefined);
  ws.send(frames.start);
});
await new Promise<void>((resolve) => http.listen(0, "127.0.0.1", resolve));
const port = (http.address() as AddressInfo).port;

await control({
  url: `ws://127.0.0.1:${port}`,
  sockets: () => topics.size,
  publish(topic, frame) {
    const set = topics.get(topic);
    if (!set || set.size === 0) return;
    const bytes = Buffer.from(frame);
    for (const ws of set) if (ws.readyState === WebSocket.OPEN) ws.send(bytes, { binary: false });
  },
});
