/**
 * The convergence property, extended to Apps: after a random workload and
 * random faults, every subscriber's reconstructed app set equals
 * `kserviceToApp` of the server's state — whatever its target, buffer size
 * and slow-consumer policy (coalesce, or a fast reader).
 */
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { KubeClient } from "../src/kube/client.ts";
import { AppK8sClient, appKey } from "../src/flyte/app-client.ts";
import { kserviceToApp } from "../src/flyte/convert.ts";
import type { App, WatchResponse } from "../src/flyte/model.ts";
import { KServiceName } from "../src/flyte/naming.ts";
import type { Subscription } from "../src/flyte/subscriptions.ts";
import { seededRandom } from "../src/prng.ts";
import { type FaultRule, startSandbox } from "../src/sandbox/mod.ts";
import type { KubeObject } from "../src/watch/types.ts";
import { delay, waitFor } from "./helpers/run.ts";

const PROJECTS = ["alpha", "beta"];

function ksvc(project: string, name: string, managed: boolean): KubeObject {
  return {
    apiVersion: "serving.knative.dev/v1",
    kind: "Service",
    metadata: {
      name: KServiceName({ project, domain: "dev", name }),
      namespace: "flyte",
      labels: { "flyte.org/app-managed": String(managed), "flyte.org/project": project, "flyte.org/domain": "dev" },
      annotations: { "flyte.org/app-id": `${project}/dev/${name}` },
    },
    spec: { template: { spec: { containers: [{ image: "app:0" }] } } },
  };
}

/** Applies a subscriber's events to a map, strictly (no update/delete of unknown apps unless coalesced re-creates). */
function follow(sub: Subscription) {
  const state = new Map<string, App>();
  const errors: string[] = [];
  const done = (async () => {
    for await (const e of sub) apply(state, e, errors);
  })();
  return { state, errors, done };
}

function apply(state: Map<string, App>, e: WatchResponse, errors: string[]): void {
  if ("createEvent" in e) state.set(appKey(e.createEvent.app.metadata?.id), e.createEvent.app);
  else if ("updateEvent" in e) {
    const k = appKey(e.updateEvent.updatedApp.metadata?.id);
    if (!state.has(k)) errors.push(`update of unknown ${k}`);
    state.set(k, e.updateEvent.updatedApp);
  } else {
    const k = appKey(e.deleteEvent.app.metadata?.id);
    if (!state.delete(k)) errors.push(`delete of unknown ${k}`);
  }
}

const FAULTS: (FaultRule | "compact" | "close")[] = [
  { verb: "watch", action: { type: "cut", afterEvents: 1 } },
  { verb: "watch", action: { type: "stall", afterEvents: 1 } },
  "compact",
  "close",
  { verb: "watch", action: { type: "status", code: 410, reason: "Expired", inStream: true } },
  { verb: "watch", action: { type: "garbage", afterEvents: 1 } },
  { verb: "list", action: { type: "status", code: 500, reason: "InternalError" } },
];

describe("convergence of App subscriptions under random workload and faults", () => {
  for (const seed of [11, 12]) {
    test(`seed ${seed}: every subscriber's apps = kserviceToApp(server state)`, async () => {
      const rnd = seededRandom(seed);
      const { sandbox, url, close } = await startSandbox({ historyLimit: 40, bookmarkIntervalMs: 50 });
      const apps = new AppK8sClient({
        client: new KubeClient({ server: url }),
        config: { baseDomain: "example.com", watchBufferSize: 5, slowConsumer: "coalesce" },
        watch: { idleTimeoutMs: 250, backoff: { initialMs: 2, maxMs: 20 }, initialList: seed % 2 ? "paginated" : "auto", random: rnd },
      });
      for (let i = 0; i < 6; i++) sandbox.create("services", ksvc(PROJECTS[i % 2]!, `app-${i}`, true));
      try {
        await apps.startWatching();
        const everything = follow(apps.subscribe("", { snapshot: true }));
        const alpha = follow(apps.subscribe({ project: "alpha", domain: "dev" }, { snapshot: true }));
        const slowSub = apps.subscribe("", { snapshot: true }); // read only at the end: coalesces
        let next = 6;
        for (let step = 0; step < 250; step++) {
          const list = sandbox.list("services", "flyte");
          const pick = () => list[Math.floor(rnd() * list.length)]!;
          const op = rnd();
          if (op < 0.25 || list.length === 0) sandbox.create("services", ksvc(PROJECTS[Math.floor(rnd() * 2)]!, `app-${next++}`, rnd() < 0.85));
          else {
            const o = pick();
            const name = o.metadata.name!;
            if (op < 0.45) {
              sandbox.updateStatus("services", "flyte", name, {
                latestReadyRevisionName: `${name}-0000${step % 3}`,
                conditions: [{ type: "Ready", status: rnd() < 0.5 ? "True" : "Unknown", reason: rnd() < 0.3 ? "Deploying" : "", lastTransitionTime: `2026-05-0${1 + (step % 9)}T00:00:00Z` }],
              });
            } else if (op < 0.6) sandbox.patch("services", "flyte", name, { metadata: { labels: { "flyte.org/app-managed": String(rnd() < 0.5) } } });
            else if (op < 0.7) sandbox.patch("services", "flyte", name, { metadata: { labels: { "flyte.org/app-stopped": rnd() < 0.5 ? "true" : null } } });
            else if (op < 0.85) sandbox.delete("services", "flyte", name);
            else sandbox.patch("services", "flyte", name, { spec: { template: { spec: { containers: [{ image: `app:${step}` }] } } } });
          }
          if (rnd() < 0.08) {
            const f = FAULTS[Math.floor(rnd() * FAULTS.length)]!;
            if (f === "compact") sandbox.compact();
            else if (f === "close") sandbox.closeWatches();
            else {
              sandbox.faults.add(f);
              sandbox.closeWatches();
            }
          }
          if (rnd() < 0.4) await delay(Math.floor(rnd() * 4));
        }
        sandbox.faults.clear();
        const expected = () => {
          const m = new Map<string, string>();
          for (const o of sandbox.list("services", "flyte")) {
            if (o.metadata.labels?.["flyte.org/app-managed"] !== "true") continue;
            const app = kserviceToApp(o, apps.config);
            m.set(appKey(app.metadata?.id), JSON.stringify(app));
          }
          return m;
        };
        const view = (s: Map<string, App>, only?: string) =>
          new Map([...s].filter(([k]) => !only || k.split("/")[1] === only).map(([k, a]) => [k, JSON.stringify(a)]));
        const sameMap = (a: Map<string, string>, b: Map<string, string>) => a.size === b.size && [...a].every(([k, x]) => b.get(k) === x);
        await waitFor(() => sameMap(view(everything.state), expected()), `seed ${seed}: "" subscriber converges`, 20_000);
        const want = expected();
        assert.ok(sameMap(view(alpha.state), new Map([...want].filter(([k]) => k.split("/")[1] === "alpha"))), "project subscriber");
        const slow = follow(slowSub);
        await waitFor(() => sameMap(view(slow.state), want), "the coalescing subscriber converges", 10_000);
        assert.deepEqual(everything.errors, [], "the fast subscriber never saw an impossible event");
        assert.ok(slowSub.stats().coalesced > 0, "the slow subscriber really coalesced");
      } finally {
        await apps.stopWatching();
        await close();
      }
    });
  }
});
