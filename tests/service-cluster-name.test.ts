/**
 * A named cluster (`--cluster-name`, `--cluster-org`), over real HTTP on two sandboxes:
 * every App's `status.assignedCluster` is the name; `/v1/info` shows it; `cluster` (REST, WebSocket,
 * SSE) and `cluster_id` (AppService over Connect) name this cluster or get a 404 / not_found that
 * names the one served; and a resume token names its cluster, so a token from another cluster gets
 * a snapshot saying `other-cluster` on every transport — the case of issue 25, where a replica
 * of cluster B took cluster A's token as "resumed" and its client kept A's apps and missed B's.
 * Unnamed, everything stays as before: no `assignedCluster`, tokens without a name.
 */
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-web";
import { AppService } from "../src/flyte/proto/app_service_pb.ts";
import { readToken } from "../src/flyte/journal.ts";
import { appEvents, eventLines, eventually, http, type Json, ksvc, SseClient, startTestService, type TestService, waitFor, WsClient } from "./helpers/service.ts";

interface AppClient {
  list(req: Json): Promise<{ apps: { metadata?: { id?: { name: string } } }[] }>;
  watch(req: Json, options?: { signal?: AbortSignal }): AsyncIterable<unknown>;
}

const client = (s: TestService): AppClient => createClient(AppService, createConnectTransport({ baseUrl: `${s.url}/internal` })) as unknown as AppClient;

async function rejects(p: Promise<unknown>, code: Code, message: RegExp): Promise<void> {
  try {
    await p;
  } catch (err) {
    const e = ConnectError.from(err);
    assert.equal(Code[e.code], Code[code], e.message);
    assert.match(e.rawMessage, message);
    return;
  }
  assert.fail(`expected ${Code[code]}`);
}

async function firstMessage(it: AsyncIterable<unknown>): Promise<unknown> {
  for await (const m of it) return m;
  return undefined;
}

/** The first resume token of a stream's frames. */
function tokenOf(frames: Json[]): string {
  for (const f of frames) {
    const t = f.synced?.resume ?? f.resume;
    if (typeof t === "string") return t;
  }
  throw new Error("no frame carried a resume token");
}

/** A Connect JSON Watch with `appwatch-resume`: its start headers, then closed. */
async function connectStart(s: TestService, token: string): Promise<{ start: string | null; failed: string | null }> {
  const abort = new AbortController();
  const body = new Uint8Array([0, 0, 0, 0, 2, 0x7b, 0x7d]); // one envelope: {}
  const res = await fetch(`${s.url}/internal/flyteidl2.app.AppService/Watch`, {
    method: "POST",
    headers: { "content-type": "application/connect+json", "appwatch-resume": token },
    body,
    signal: abort.signal,
  });
  const out = { start: res.headers.get("appwatch-start"), failed: res.headers.get("appwatch-resume-failed") };
  abort.abort();
  await res.body?.cancel().catch(() => {});
  return out;
}

describe("a named cluster", () => {
  test("assignedCluster on every App, /v1/info, and cluster / cluster_id targets on REST, WebSocket, SSE and Connect", async () => {
    const east = await startTestService({ clusterName: "east", clusterOrg: "acme" });
    const plain = await startTestService();
    const clients: { close(): void }[] = [];
    try {
      const list = await http(`${east.url}/v1/apps`);
      assert.equal(list.status, 200);
      assert.equal(list.body.apps.length, 6);
      for (const app of list.body.apps) {
        assert.equal(app.status.assignedCluster, "east");
        assert.equal(Object.keys(app.status)[0], "assignedCluster", "Status field 1 comes first, as Go writes it");
      }
      const plainList = await http(`${plain.url}/v1/apps`);
      assert.ok(plainList.body.apps.every((a: Json) => !("assignedCluster" in a.status)), "unnamed: as Flyte's data plane, no assignedCluster");

      assert.deepEqual((await http(`${east.url}/v1/info`)).body.cluster.name, "east");
      assert.deepEqual((await http(`${east.url}/v1/info`)).body.cluster.organization, "acme");
      assert.equal((await http(`${plain.url}/v1/info`)).body.cluster.name, undefined);

      // REST: this cluster by name (and organization), or a 404 that names the one served.
      assert.equal((await http(`${east.url}/v1/apps?cluster=east`)).body.apps.length, 6);
      assert.equal((await http(`${east.url}/v1/apps?cluster=east&cluster_org=acme`)).body.apps.length, 6);
      const first = list.body.apps[0].metadata.id;
      assert.equal((await http(`${east.url}/v1/apps/${first.project}/${first.domain}/${first.name}?cluster=east`)).status, 200);
      for (const q of ["cluster=west", "cluster=east&cluster_org=other"]) {
        const r = await http(`${east.url}/v1/apps?${q}`);
        assert.equal(r.status, 404, q);
        assert.match(r.body.message, /^no cluster ".*" here: this appwatch serves cluster "acme\/east"$/, q);
      }
      assert.equal((await http(`${east.url}/v1/apps/${first.project}/${first.domain}/${first.name}?cluster=west`)).status, 404);
      const unnamed = await http(`${plain.url}/v1/apps?cluster=east`);
      assert.equal(unnamed.status, 404);
      assert.match(unnamed.body.message, /has no name \(start it with --cluster-name\)/);
      const bad = await http(`${east.url}/v1/apps?cluster_org=acme`);
      assert.equal(bad.status, 400);
      assert.match(bad.body.message, /cluster_org needs cluster/);
      assert.equal((await http(`${east.url}/v1/apps?cluster=-bad-`)).status, 400);

      // WebSocket and SSE: the same query, the same answers.
      const ws = await WsClient.connect(`${east.wsUrl}/v1/watch?cluster=east`);
      clients.push(ws);
      await ws.synced();
      assert.equal(appEvents(ws.frames).length, 6);
      const sse = await SseClient.connect(`${east.url}/v1/watch?cluster=east&cluster_org=acme`);
      clients.push(sse);
      await sse.synced();
      assert.equal(appEvents(sse.frames).length, 6);
      const wsOther = await http(`${east.url}/v1/watch?cluster=west`, { headers: { accept: "text/event-stream" } });
      assert.equal(wsOther.status, 404);
      await assert.rejects(WsClient.connect(`${east.wsUrl}/v1/watch?cluster=west`));

      // Connect: cluster_id on List and Watch.
      const c = client(east);
      assert.equal((await c.list({ filterBy: { case: "clusterId", value: { name: "east" } } })).apps.length, 6);
      assert.equal((await c.list({ filterBy: { case: "clusterId", value: { organization: "acme", name: "east" } } })).apps.length, 6);
      await rejects(c.list({ filterBy: { case: "clusterId", value: { name: "west" } } }), Code.NotFound, /no cluster "west" here: this appwatch serves cluster "acme\/east"/);
      await rejects(c.list({ filterBy: { case: "clusterId", value: { organization: "other", name: "east" } } }), Code.NotFound, /"other\/east"/);
      await rejects(c.list({ filterBy: { case: "clusterId", value: {} } }), Code.InvalidArgument, /clusterId\.name/);
      const abort = new AbortController();
      assert.ok(await firstMessage(c.watch({ target: { case: "clusterId", value: { name: "east" } } }, { signal: abort.signal })), "a Watch of this cluster streams its apps");
      abort.abort();
      await rejects(firstMessage(c.watch({ target: { case: "clusterId", value: { name: "west" } } })), Code.NotFound, /no cluster "west"/);
      await rejects(firstMessage(client(plain).watch({ target: { case: "clusterId", value: { name: "east" } } })), Code.NotFound, /has no name/);
    } finally {
      for (const cl of clients) cl.close();
      await east.stop();
      await plain.stop();
    }
  });

  test("a resume token names its cluster: one from cluster A gets B's snapshot with other-cluster on WebSocket, SSE and Connect; its own cluster resumes it", async () => {
    // Both sandboxes count resourceVersions from the same number, as two clusters' etcds may: A's
    // token lands inside B's journal window, where an unnamed B answered "resumed" (issue 25).
    const a = await startTestService({ clusterName: "a" }, { initialResourceVersion: 1_000 });
    const b = await startTestService({ clusterName: "b" }, { initialResourceVersion: 1_000 });
    const plain = await startTestService();
    const clients: { close(): void }[] = [];
    const synced = (s: TestService, n: number) => eventually(async () => (await http(`${s.url}/v1/apps`)).body.apps?.length === n, `${n} apps synced`);
    try {
      for (let i = 0; i < 5; i++) {
        a.sb.create("services", ksvc("only", "dev", `on-a-${i}`));
        b.sb.create("services", ksvc("only", "dev", `on-b-early-${i}`));
      }
      await synced(a, 11);
      await synced(b, 11);
      const onA = await WsClient.connect(`${a.wsUrl}/v1/watch`);
      clients.push(onA);
      await onA.synced();
      const token = tokenOf(onA.frames);
      assert.equal(readToken(token)?.cluster, "a");
      for (let i = 0; i < 5; i++) b.sb.create("services", ksvc("only", "dev", `on-b-late-${i}`));
      await synced(b, 16);
      const plainWs = await WsClient.connect(`${plain.wsUrl}/v1/watch`);
      clients.push(plainWs);
      await plainWs.synced();
      assert.equal(readToken(tokenOf(plainWs.frames))?.cluster, undefined, "unnamed: a token without a name, as before");

      // Cluster B: a snapshot of B's apps, saying why; none of A's.
      const wsB = await WsClient.connect(`${b.wsUrl}/v1/watch?resume=${encodeURIComponent(token)}`);
      clients.push(wsB);
      await wsB.synced();
      assert.deepEqual(wsB.frames[0], { start: { mode: "snapshot", apps: 16, resumeFailed: "other-cluster" } });
      const lines = eventLines(wsB.frames);
      assert.equal(lines.filter((l) => l.includes("/on-b-")).length, 10);
      assert.equal(lines.filter((l) => l.includes("/on-a-")).length, 0);
      const sseB = await SseClient.connect(`${b.url}/v1/watch`, { "last-event-id": token });
      clients.push(sseB);
      await sseB.synced();
      assert.deepEqual(sseB.frames[0], { start: { mode: "snapshot", apps: 16, resumeFailed: "other-cluster" } });
      assert.deepEqual(await connectStart(b, token), { start: "snapshot", failed: "other-cluster" });
      // Named ↔ unnamed are different clusters too, both ways.
      assert.deepEqual(await connectStart(plain, token), { start: "snapshot", failed: "other-cluster" });
      assert.deepEqual(await connectStart(a, tokenOf(plainWs.frames)), { start: "snapshot", failed: "other-cluster" });
      // A token from elsewhere is never waited for.
      assert.equal(await b.apps.catchUp(token, 600_000), false);

      // Cluster A resumes its own token exactly.
      a.sb.create("services", ksvc("only", "dev", "late"));
      await waitFor(() => eventLines(onA.frames).includes("create only/dev/late"), "A to apply the late app");
      const again = await WsClient.connect(`${a.wsUrl}/v1/watch?resume=${encodeURIComponent(token)}`);
      clients.push(again);
      await again.synced();
      assert.deepEqual(again.frames[0], { start: { mode: "resumed", replayed: 1 } });
      assert.deepEqual(eventLines(again.frames), ["create only/dev/late"]);
      assert.deepEqual(await connectStart(a, token), { start: "resumed", failed: null });
    } finally {
      for (const cl of clients) cl.close();
      await a.stop();
      await b.stop();
      await plain.stop();
    }
  });
});
