/**
 * Resuming streams with tokens: a client cut mid-stream while changes go on
 * reconnects with the last token it received and gets exactly what it missed
 * (compared with an uninterrupted client: no gap, no duplicate), over
 * WebSocket (`?resume=`) and SSE (`Last-Event-ID`). Tokens that cannot be
 * resumed — too old for the window, garbage, from before a relist — get a
 * fresh snapshot that says why.
 */
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { encodeToken } from "../src/flyte/journal.ts";
import {
  appEvents,
  describeFrame,
  eventLines,
  type Json,
  ksvc,
  ksvcName,
  messagesOf,
  sleep,
  SseClient,
  startTestService,
  statusWithMessage,
  type TestService,
  waitFor,
  within,
  WsClient,
} from "./helpers/service.ts";

const PROJECT = "res";
const APPS = ["a", "b", "c"];
const TARGET = `project=${PROJECT}&domain=dev`;

/** "update res/dev/a m17": an event and the change it carries. */
function sig(frame: Json): string {
  const app = frame.createEvent?.app ?? frame.updateEvent?.updatedApp ?? frame.deleteEvent?.app;
  const m = messagesOf(app).find((x) => /^m\d+$/.test(x));
  return `${describeFrame(frame)}${m ? ` ${m}` : ""}`;
}

/** The token a client can resume with after the frames it has: the last one any frame carried. */
function lastToken(frames: Json[]): string {
  for (let i = frames.length - 1; i >= 0; i--) {
    const f = frames[i];
    const t = f.resume ?? f.synced?.resume ?? f.heartbeat?.resume;
    if (typeof t === "string") return t;
  }
  throw new Error("no frame carried a resume token");
}

/** Changes apps of PROJECT one at a time (each a distinct App) until stopped. */
function startProducer(s: TestService) {
  let made = 0;
  let stopped = false;
  const done = (async () => {
    while (!stopped) {
      const app = APPS[made % APPS.length]!;
      s.sb.updateStatus("services", "flyte", ksvcName(PROJECT, "dev", app), statusWithMessage(`m${made}`));
      made++;
      await sleep(2); // kept: this paces the load (a change every ~2 ms while clients reconnect), it waits for nothing
    }
  })();
  return {
    get made() {
      return made;
    },
    async stop(): Promise<number> {
      stopped = true;
      await done;
      return made;
    },
  };
}

async function setup(overrides: Parameters<typeof startTestService>[0] = {}) {
  const s = await startTestService(overrides);
  for (const a of APPS) s.sb.create("services", ksvc(PROJECT, "dev", a));
  await waitFor(() => s.apps.metrics.events.create >= 6 + APPS.length, "the test apps to be watched");
  return s;
}

/**
 * What the resumed client got after its token must be exactly what the
 * uninterrupted one got after the frame carrying that token.
 */
function assertExactlyTheMissed(uninterrupted: Json[], token: string, resumed: Json[]): void {
  const at = uninterrupted.findIndex((f) => f.resume === token || f.synced?.resume === token);
  assert.ok(at >= 0, "the uninterrupted client saw the frame the token came from");
  const want = appEvents(uninterrupted.slice(at + 1)).map(sig);
  const got = appEvents(resumed).map(sig);
  assert.deepEqual(got, want, "no gap, no duplicate, same order");
}

describe("resume tokens", () => {
  test("WebSocket: a client cut mid-stream resumes with its last token and gets exactly the missed changes, then live ones", async () => {
    const s = await setup();
    const clients: WsClient[] = [];
    let p: ReturnType<typeof startProducer> | undefined;
    try {
      const a = await WsClient.connect(`${s.wsUrl}/v1/watch?${TARGET}`);
      const b = await WsClient.connect(`${s.wsUrl}/v1/watch?${TARGET}`);
      clients.push(a, b);
      await a.synced();
      await b.synced();
      p = startProducer(s);

      await b.events(APPS.length + 20);
      b.close();
      await b.closed;
      const token = lastToken(b.frames);
      const seenByA = appEvents(a.frames).length;
      await a.events(seenByA + 15); // changes go on while b is away

      const b2 = await WsClient.connect(`${s.wsUrl}/v1/watch?${TARGET}&resume=${encodeURIComponent(token)}`);
      clients.push(b2);
      await b2.synced();
      await a.events(seenByA + 30); // and while it catches up
      const total = await p.stop();
      const lastChange = `m${total - 1}`;
      const has = (frames: Json[]) => appEvents(frames).some((f) => sig(f).endsWith(` ${lastChange}`));
      await a.until(has, "the last change on the uninterrupted client");
      await b2.until(has, "the last change on the resumed client");

      const start = b2.frames[0].start;
      assert.equal(start.mode, "resumed");
      const syncedAt = b2.frames.findIndex((f) => f.synced);
      assert.equal(b2.frames[syncedAt].synced.after, "resume");
      assert.equal(start.replayed, syncedAt - 1, "replayed = the events before the synced frame");
      assert.ok(start.replayed >= 15, `replayed ${start.replayed}: the changes made while away`);
      assertExactlyTheMissed(a.frames, token, b2.frames);
      // Together, b's two connections saw what a saw after the snapshot.
      assert.deepEqual([...appEvents(b.frames), ...appEvents(b2.frames)].map(sig), appEvents(a.frames).map(sig));
    } finally {
      await p?.stop();
      for (const c of clients) c.close();
      await s.stop();
    }
  });

  test("SSE: Last-Event-ID resumes exactly where the stream was cut", async () => {
    const s = await setup();
    const clients: (WsClient | SseClient)[] = [];
    let p: ReturnType<typeof startProducer> | undefined;
    try {
      const a = await WsClient.connect(`${s.wsUrl}/v1/watch?${TARGET}`);
      const b = await SseClient.connect(`${s.url}/v1/watch?${TARGET}`);
      clients.push(a, b);
      await a.synced();
      await b.synced();
      p = startProducer(s);

      await b.events(APPS.length + 20);
      b.close();
      await b.done;
      const lastId = b.messages.filter((m) => m.id !== undefined).at(-1)!.id!;
      assert.equal(lastId, lastToken(b.frames), "the SSE id is the resume token");
      const seenByA = appEvents(a.frames).length;
      await a.events(seenByA + 15);

      const b2 = await SseClient.connect(`${s.url}/v1/watch?${TARGET}`, { "last-event-id": lastId });
      clients.push(b2);
      await b2.synced();
      await a.events(seenByA + 30);
      const total = await p.stop();
      const has = (frames: Json[]) => appEvents(frames).some((f) => sig(f).endsWith(` m${total - 1}`));
      await a.until(has, "the last change on the uninterrupted client");
      await b2.until(has, "the last change on the resumed client");

      assert.equal(b2.frames[0].start.mode, "resumed");
      assert.ok(b2.frames[0].start.replayed >= 15);
      assertExactlyTheMissed(a.frames, lastId, b2.frames);
    } finally {
      await p?.stop();
      for (const c of clients) c.close();
      await s.stop();
    }
  });

  test("a token older than the resume window gets a fresh snapshot with resumeFailed \"too-old\"; one inside it resumes", async () => {
    const s = await startTestService({ resumeWindow: 5 });
    const clients: WsClient[] = [];
    try {
      const first = await WsClient.connect(`${s.wsUrl}/v1/watch`);
      const live = await WsClient.connect(`${s.wsUrl}/v1/watch?snapshot=false`);
      clients.push(first, live);
      await first.synced();
      await live.until((f) => f.length > 0, "the start frame");
      const old = lastToken(first.frames);
      first.close();
      for (let i = 0; i < 10; i++) s.sb.create("services", ksvc("old", "dev", `app-${i}`));
      await live.events(10);
      const recent = live.frames[7].resume; // after the 7th of 10 changes: 3 missed, within the window of 5

      const again = await WsClient.connect(`${s.wsUrl}/v1/watch?resume=${encodeURIComponent(old)}`);
      clients.push(again);
      await again.synced();
      assert.deepEqual(again.frames[0], { start: { mode: "snapshot", apps: 16, resumeFailed: "too-old" } });
      assert.equal(appEvents(again.frames).length, 16);
      assert.ok(appEvents(again.frames).every((f) => f.createEvent));
      assert.equal(again.frames[17].synced.after, "snapshot");
      assert.deepEqual(eventLines(again.frames).filter((l) => l.includes(" old/")).sort(), Array.from({ length: 10 }, (_, i) => `create old/dev/app-${i}`).sort());

      const inside = await WsClient.connect(`${s.wsUrl}/v1/watch?resume=${encodeURIComponent(recent)}`);
      clients.push(inside);
      await inside.synced();
      assert.deepEqual(inside.frames[0], { start: { mode: "resumed", replayed: 3 } });
      assert.deepEqual(eventLines(inside.frames), ["create old/dev/app-7", "create old/dev/app-8", "create old/dev/app-9"]);
    } finally {
      for (const c of clients) c.close();
      await s.stop();
    }
  });

  test("a garbage token (query or Last-Event-ID) or one for another watch gets a snapshot saying why", async () => {
    const s = await startTestService();
    const clients: (WsClient | SseClient)[] = [];
    try {
      const cases: [string, string][] = [
        ["not-a-token", "malformed"],
        ["eyJ2IjoxfQ", "malformed"], // {"v":1}: base64url JSON, but not a token
        ["%F0%9F%92%A5!", "malformed"],
        [encodeURIComponent(encodeToken({ "some-other-namespace": "5" })), "unknown-stream"],
      ];
      for (const [token, reason] of cases) {
        const c = await WsClient.connect(`${s.wsUrl}/v1/watch?resume=${token}`);
        clients.push(c);
        await c.synced();
        assert.deepEqual(c.frames[0], { start: { mode: "snapshot", apps: 6, resumeFailed: reason } }, `resume=${token}`);
        assert.equal(appEvents(c.frames).length, 6);
      }
      // Such tokens never wait for this replica to "catch up" with them (only a token ahead of it would).
      assert.equal(await within(s.apps.catchUp("garbage", 600_000), "catchUp to give up on a malformed token", 20_000), false);
      assert.equal(await within(s.apps.catchUp(encodeToken({ elsewhere: "1" }), 600_000), "catchUp to give up on a foreign token", 20_000), false);
      const sse = await SseClient.connect(`${s.url}/v1/watch`, { "last-event-id": "garbage" });
      clients.push(sse);
      await sse.synced();
      assert.deepEqual(sse.frames[0], { start: { mode: "snapshot", apps: 6, resumeFailed: "malformed" } });
    } finally {
      for (const c of clients) c.close();
      await s.stop();
    }
  });

  test("a relist (history compacted, watch cut: 410) sends synced after \"resync\" to live sockets; tokens from before it get a snapshot", async () => {
    const s = await startTestService();
    const clients: WsClient[] = [];
    try {
      const c = await WsClient.connect(`${s.wsUrl}/v1/watch`);
      clients.push(c);
      await c.synced();
      const before = lastToken(c.frames);

      // Move the cluster's resourceVersion on where the watch does not look, then compact and cut:
      // the watch cannot resume (410 Expired) and must list again; a change made meanwhile comes from that list.
      s.sb.create("services", ksvc("elsewhere", "dev", "x", { ns: "other-namespace" }));
      s.sb.compact();
      s.sb.closeWatches();
      s.sb.create("services", ksvc("relist", "dev", "new"));
      // Both watches (KServices and Revisions) lost their history: each relist ends with a marker.
      const afterCreate = (f: Json[]) => f.slice(f.findIndex((x) => x.createEvent?.app.metadata.id.name === "new") + 1);
      await c.until((f) => f.some((x) => x.createEvent?.app.metadata.id.name === "new") && afterCreate(f).some((x) => x.synced?.after === "resync"), "the resync marker after the change", 20_000);
      const tail = c.frames.slice(c.frames.findIndex((f) => f.synced?.after === "snapshot") + 1);
      assert.deepEqual(tail.map(describeFrame).filter((l) => l !== "synced resync"), ["create relist/dev/new"]);
      // The relist's diff is at no watch position: its events carry no token of their own, at most the
      // pre-relist one, and resuming from that must never be answered "nothing missed".
      const diffToken = tail.find((f) => f.createEvent)?.resume;
      if (diffToken !== undefined) {
        const fromDiff = await WsClient.connect(`${s.wsUrl}/v1/watch?resume=${encodeURIComponent(diffToken)}`);
        clients.push(fromDiff);
        await fromDiff.synced();
        assert.equal(fromDiff.frames[0].start.mode, "snapshot", `resuming from a relist diff event's token: ${JSON.stringify(fromDiff.frames[0])}`);
      }
      const resync = afterCreate(c.frames).find((x) => x.synced?.after === "resync")!.synced.resume;
      assert.equal(typeof resync, "string");
      const relists = s.apps.watchMetrics()!.relists;
      assert.ok(relists >= 1, `relists: ${relists}`);

      const stale = await WsClient.connect(`${s.wsUrl}/v1/watch?resume=${encodeURIComponent(before)}`);
      clients.push(stale);
      await stale.synced();
      assert.deepEqual(stale.frames[0], { start: { mode: "snapshot", apps: 7, resumeFailed: "too-old" } });

      const fresh = await WsClient.connect(`${s.wsUrl}/v1/watch?resume=${encodeURIComponent(resync)}`);
      clients.push(fresh);
      await fresh.synced();
      assert.deepEqual(fresh.frames[0], { start: { mode: "resumed", replayed: 0 } });
      s.sb.delete("services", "flyte", ksvcName("relist", "dev", "new"));
      await fresh.events(1);
      assert.deepEqual(eventLines(fresh.frames), ["delete relist/dev/new"]);
    } finally {
      for (const c of clients) c.close();
      await s.stop();
    }
  });
});
