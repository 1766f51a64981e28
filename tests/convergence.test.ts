/**
 * The convergence property: a random workload (creates, updates, status
 * changes, label changes in and out of the selector, deletes) interleaved
 * with random faults (cuts, stalls, 410s, continue expiry, 429s, 5xx,
 * garbage lines, slow drips) → once quiet, the reflector's store equals the
 * server's state exactly, and replaying the emitted events from empty
 * reproduces it with no lost, phantom or duplicate event.
 */
import { describe, test } from "node:test";
import process from "node:process";
import assert from "node:assert/strict";
import { KubeClient } from "../src/kube/client.ts";
import { Reflector } from "../src/watch/reflector.ts";
import { KNATIVE_SERVICES, type KubeObject } from "../src/watch/types.ts";
import { type FaultRule, type Sandbox, startSandbox } from "../src/sandbox/mod.ts";
import { delay, start, waitFor } from "./helpers/run.ts";
import { seededRandom } from "../src/prng.ts";
import { fingerprint, strictReplay } from "./helpers/replay.ts";

const SELECTOR = "flyte.org/app-managed=true";


function ksvc(name: string, ns: string, managed: boolean): KubeObject {
  return {
    apiVersion: "serving.knative.dev/v1",
    kind: "Service",
    metadata: { name, namespace: ns, labels: { "flyte.org/app-managed": String(managed) } },
    spec: { template: { spec: { containers: [{ image: "app:0" }] } } },
  };
}

function serverState(sandbox: Sandbox): string[] {
  return fingerprint(sandbox.list("services", "flyte").filter((o) => o.metadata.labels?.["flyte.org/app-managed"] === "true"));
}

const FAULTS: ((rnd: () => number) => FaultRule | "compact" | "close" | "expire-continue")[] = [
  (r) => ({ verb: "watch", action: { type: "cut", afterEvents: Math.floor(r() * 3), midLine: r() < 0.5 } }),
  () => ({ verb: "watch", action: { type: "stall", afterEvents: 1 } }),
  () => "compact",
  () => "close",
  () => "expire-continue",
  () => ({ verb: "watch", action: { type: "status", code: 410, reason: "Expired" } }),
  () => ({ verb: "watch", action: { type: "status", code: 410, reason: "Gone", inStream: true } }),
  () => ({ verb: "watch", action: { type: "status", code: 429, reason: "TooManyRequests", retryAfterSeconds: 0 } }),
  () => ({ verb: "list", action: { type: "status", code: 500, reason: "InternalError" } }),
  () => ({ verb: "watch", action: { type: "status", code: 500, reason: "InternalError", inStream: true } }),
  (r) => ({ verb: "watch", action: { type: "garbage", afterEvents: Math.floor(r() * 2) } }),
  () => ({ verb: "list", action: { type: "drip", chunkBytes: 512, delayMs: 2 } }),
  () => ({ verb: "watch", action: { type: "drip", chunkBytes: 7, delayMs: 1 } }),
];

async function scenario(seed: number, initialList: "paginated" | "auto", steps: number): Promise<void> {
  const rnd = seededRandom(seed);
  const { sandbox, url, close } = await startSandbox({ historyLimit: 30, bookmarkIntervalMs: 40, continueTtlMs: 200 });
  const reflector = new Reflector({
    client: new KubeClient({ server: url }),
    resource: KNATIVE_SERVICES,
    namespace: "flyte",
    labelSelector: SELECTOR,
    initialList,
    pageSize: 4,
    idleTimeoutMs: 250,
    streamingSyncTimeoutMs: 2_000,
    backoff: { initialMs: 2, maxMs: 20 },
    random: rnd,
  });
  // Some objects before the first list.
  for (let i = 0; i < 8; i++) sandbox.create("services", ksvc(`app-${i}`, "flyte", rnd() < 0.8));
  const run = start(reflector);
  const names = () => sandbox.list("services", "flyte").map((o) => o.metadata.name!);
  let next = 8;
  try {
    await waitFor(() => reflector.synced, "initial sync");
    for (let step = 0; step < steps; step++) {
      const existing = names();
      const pick = () => existing[Math.floor(rnd() * existing.length)]!;
      const op = rnd();
      if (op < 0.25 || existing.length === 0) {
        sandbox.create("services", ksvc(`app-${next++}`, rnd() < 0.9 ? "flyte" : "other", rnd() < 0.8));
      } else if (op < 0.5) {
        sandbox.patch("services", "flyte", pick(), { spec: { template: { spec: { containers: [{ image: `app:${step}` }] } } } });
      } else if (op < 0.65) {
        sandbox.updateStatus("services", "flyte", pick(), { observedGeneration: step, conditions: [{ type: "Ready", status: rnd() < 0.5 ? "True" : "False" }] });
      } else if (op < 0.8) {
        sandbox.patch("services", "flyte", pick(), { metadata: { labels: { "flyte.org/app-managed": String(rnd() < 0.5) } } });
      } else if (op < 0.9) {
        sandbox.delete("services", "flyte", pick());
      } else {
        // Delete and re-create under the same name: a new uid.
        const name = pick();
        sandbox.delete("services", "flyte", name);
        sandbox.create("services", ksvc(name, "flyte", true));
      }
      if (rnd() < 0.15) {
        const fault = FAULTS[Math.floor(rnd() * FAULTS.length)]!(rnd);
        if (fault === "compact") sandbox.compact();
        else if (fault === "close") sandbox.closeWatches();
        else if (fault === "expire-continue") sandbox.expireContinueTokens();
        else {
          sandbox.faults.add(fault);
          // Faults apply to new requests: often force one.
          if (rnd() < 0.6) sandbox.closeWatches();
        }
      }
      if (rnd() < 0.5) await delay(Math.floor(rnd() * 4));
    }
    sandbox.faults.clear();
    // Quiet: the store must converge to the server's state exactly.
    await waitFor(() => reflector.synced && same(fingerprint(reflector.store.values()), serverState(sandbox)), `seed ${seed}: store converges`, 20_000)
      .catch((err) => {
        throw new Error(`${(err as Error).message}\nstore:  ${fingerprint(reflector.store.values()).join(" ")}\nserver: ${serverState(sandbox).join(" ")}`);
      });
    // Replaying every emitted event from empty gives the same state (no lost, phantom or duplicate events).
    const replayed = strictReplay(run.events);
    assert.deepEqual(fingerprint(replayed.values()), serverState(sandbox), `seed ${seed}: replay`);
    assert.equal(run.error(), undefined);
    // The faults really happened: the engine had to recover many times.
    const m = reflector.metrics;
    const recoveries = Object.values(m.reconnects).reduce((a, b) => a + b, 0) + m.relists + m.failures;
    if (process.env.CONVERGENCE_VERBOSE) console.log(JSON.stringify({ seed, initialList, emittedEvents: run.events.length, ...m }));
    assert.ok(recoveries >= 10, `only ${recoveries} recoveries`);
    assert.ok(m.relists >= 1, "at least one relist");
    assert.ok(run.events.some((e) => e.type === "synced" && e.phase === "initial"));
  } finally {
    await run.stop();
    await close();
  }
}

function same(a: string[], b: string[]): boolean {
  return a.length === b.length && a.every((x, i) => x === b[i]);
}

describe("convergence under random workload and faults", () => {
  for (const seed of [1, 2, 3]) {
    for (const mode of ["paginated", "auto"] as const) {
      test(`seed ${seed}, ${mode} list: store equals server, replay reproduces it`, async () => {
        await scenario(seed * 7919 + (mode === "auto" ? 1 : 0), mode, 400);
      });
    }
  }
});
