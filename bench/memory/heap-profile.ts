/**
 * B7 profile: what the product path retains per app, from a V8 heap snapshot (Node only).
 *
 * `node --import tsx --expose-gc bench/memory/heap-profile.ts snapshot <appclient|client-node-rev> <N> <file>`:
 * starts `bench/sync/server.ts` with N KServices (+ N Revisions), syncs them into an
 * `AppK8sClient` (or client-node 1.4.0's two informers), forces a GC and writes a heap snapshot.
 *
 * `node bench/memory/heap-profile.ts diff <file1> <N1> <file2> <N2>`: self size by constructor, growth per
 * app between two snapshots of the same contender, and how much of the larger heap is strings
 * whose content repeats in ≥ 10 % of the apps (what interning would save).
 *
 * `node bench/memory/heap-profile.ts analyze <file> [N]`: dominator tree of the snapshot (weak edges
 * ignored; Cooper–Harvey–Kennedy), then (1) self size by constructor / node type, (2) the largest
 * retainers: objects whose retained size is ≥ 1 % of the heap and whose dominator retains less
 * than twice as much (the "owners"), with their dominator chain, per app when N is given.
 * @module
 */
import { readFileSync } from "node:fs";
import process from "node:process";

const [mode, ...args] = process.argv.slice(2);

async function snapshot(variant: string, n: number, file: string): Promise<void> {
  const { startNodeHelper, fullGc, heapUsed } = await import("../lib/common.ts");
  const v8 = await import("node:v8");
  const server = await startNodeHelper<{ url: string }>("bench/sync/server.ts", ["--objects", String(n)]);
  const url = server.meta.url;
  let keep: unknown;
  const ac = new AbortController();
  try {
    if (variant === "appclient") {
      const { AppK8sClient } = await import("../../src/flyte/app-client.ts");
      const { createKubeClient } = await import("../../src/kube/connect.ts");
      const kube = await createKubeClient({ server: url, namespace: "bench", tls: { insecureSkipVerify: false }, auth: { type: "none" }, source: "bench" });
      const client = new AppK8sClient({ client: kube, namespace: "bench", watch: { initialList: "paginated" } });
      await client.startWatching(ac.signal);
      if (client.metrics.events.create !== n) throw new Error(`apps: ${client.metrics.events.create}`);
      keep = client;
    } else {
      const k8s = await import("@kubernetes/client-node");
      const kc = new k8s.KubeConfig();
      kc.loadFromOptions({ clusters: [{ name: "c", server: url, skipTLSVerify: true }], users: [{ name: "u" }], contexts: [{ name: "x", cluster: "c", user: "u" }], currentContext: "x" });
      const api = kc.makeApiClient(k8s.CustomObjectsApi);
      type Obj = import("@kubernetes/client-node").KubernetesObject;
      const listFn = (plural: string) => async () => {
        const items: Obj[] = [];
        let cont: string | undefined;
        do {
          const page = await api.listNamespacedCustomObject({ group: "serving.knative.dev", version: "v1", namespace: "bench", plural, limit: 500, _continue: cont }) as { items: Obj[]; metadata?: { continue?: string } };
          items.push(...page.items);
          cont = page.metadata?.continue || undefined;
        } while (cont);
        return { apiVersion: "v1", kind: "List", items, metadata: { resourceVersion: "5000000" } };
      };
      const base = "/apis/serving.knative.dev/v1/namespaces/bench/";
      const revs = k8s.makeInformer<Obj>(kc, base + "revisions", listFn("revisions"));
      const ksvcs = k8s.makeInformer<Obj>(kc, base + "services", listFn("services"));
      revs.on("error", () => {});
      ksvcs.on("error", () => {});
      await revs.start();
      await ksvcs.start();
      keep = [revs, ksvcs];
    }
    fullGc();
    console.error(`heap used ${((heapUsed() ?? 0) / 2 ** 20).toFixed(1)} MiB; writing ${file}`);
    v8.writeHeapSnapshot(file);
    void keep;
  } finally {
    ac.abort();
    await server.close();
  }
}

interface Snap {
  snapshot: { meta: { node_fields: string[]; node_types: [string[]]; edge_fields: string[]; edge_types: [string[]] } };
  nodes: number[];
  edges: number[];
  strings: string[];
}

function analyze(file: string, apps: number): void {
  const s = JSON.parse(readFileSync(file, "utf8")) as Snap;
  const nf = s.snapshot.meta.node_fields.length;
  const ef = s.snapshot.meta.edge_fields.length;
  const nodeTypes = s.snapshot.meta.node_types[0];
  const edgeTypes = s.snapshot.meta.edge_types[0];
  const TYPE = s.snapshot.meta.node_fields.indexOf("type");
  const NAME = s.snapshot.meta.node_fields.indexOf("name");
  const SELF = s.snapshot.meta.node_fields.indexOf("self_size");
  const EC = s.snapshot.meta.node_fields.indexOf("edge_count");
  const ET = s.snapshot.meta.edge_fields.indexOf("type");
  const EN = s.snapshot.meta.edge_fields.indexOf("name_or_index");
  const TO = s.snapshot.meta.edge_fields.indexOf("to_node");
  const WEAK = edgeTypes.indexOf("weak");
  const N = s.nodes.length / nf;
  const first = new Uint32Array(N + 1);
  for (let i = 0, e = 0; i < N; i++) {
    first[i] = e;
    e += s.nodes[i * nf + EC]! * ef;
    first[i + 1] = e;
  }
  const self = (i: number) => s.nodes[i * nf + SELF]!;
  const type = (i: number) => nodeTypes[s.nodes[i * nf + TYPE]!]!;
  const name = (i: number) => s.strings[s.nodes[i * nf + NAME]!]!;
  const label = (i: number) => {
    const t = type(i);
    return t === "object" || t === "closure" || t === "native" ? name(i).slice(0, 60) : `(${t})`;
  };
  // Reverse post-order from the root (node 0), weak edges ignored.
  const order = new Int32Array(N).fill(-1); // rpo index
  const rpo: number[] = [];
  const stack: number[] = [0];
  const iter = new Uint32Array(N);
  const seen = new Uint8Array(N);
  seen[0] = 1;
  for (let i = 0; i < N; i++) iter[i] = first[i]!;
  const post: number[] = [];
  while (stack.length) {
    const v = stack[stack.length - 1]!;
    if (iter[v]! < first[v + 1]!) {
      const e = iter[v]!;
      iter[v] = e + ef;
      if (s.edges[e + ET] === WEAK) continue;
      const w = s.edges[e + TO]! / nf;
      if (!seen[w]) {
        seen[w] = 1;
        stack.push(w);
      }
    } else {
      stack.pop();
      post.push(v);
    }
  }
  for (let i = post.length - 1; i >= 0; i--) {
    order[post[i]!] = rpo.length;
    rpo.push(post[i]!);
  }
  // Predecessors (reachable nodes only).
  const predCount = new Uint32Array(N + 1);
  for (let v = 0; v < N; v++) {
    if (order[v]! < 0) continue;
    for (let e = first[v]!; e < first[v + 1]!; e += ef) if (s.edges[e + ET] !== WEAK) predCount[s.edges[e + TO]! / nf + 1]!++;
  }
  for (let i = 0; i < N; i++) predCount[i + 1]! += predCount[i]!;
  const preds = new Uint32Array(predCount[N]!);
  const fill = predCount.slice();
  for (let v = 0; v < N; v++) {
    if (order[v]! < 0) continue;
    for (let e = first[v]!; e < first[v + 1]!; e += ef) if (s.edges[e + ET] !== WEAK) preds[fill[s.edges[e + TO]! / nf]!++] = v;
  }
  const idom = new Int32Array(N).fill(-1);
  idom[0] = 0;
  const intersect = (a: number, b: number) => {
    while (a !== b) {
      while (order[a]! > order[b]!) a = idom[a]!;
      while (order[b]! > order[a]!) b = idom[b]!;
    }
    return a;
  };
  for (let changed = true, rounds = 0; changed; rounds++) {
    changed = false;
    for (let k = 1; k < rpo.length; k++) {
      const b = rpo[k]!;
      let d = -1;
      for (let p = predCount[b]!; p < predCount[b + 1]!; p++) {
        const q = preds[p]!;
        if (idom[q]! < 0) continue;
        d = d < 0 ? q : intersect(q, d);
      }
      if (d >= 0 && idom[b] !== d) {
        idom[b] = d;
        changed = true;
      }
    }
    if (rounds > 50) break;
  }
  const retained = new Float64Array(N);
  for (let k = rpo.length - 1; k >= 0; k--) {
    const v = rpo[k]!;
    retained[v]! += self(v);
    if (v !== 0) retained[idom[v]!]! += retained[v]!;
  }
  const total = retained[0]!;
  const per = (b: number) => (apps ? `${(b / apps).toFixed(0)} B/app` : "");
  console.log(`heap snapshot ${file}: ${N} nodes, reachable ${rpo.length}, total ${(total / 2 ** 20).toFixed(1)} MiB${apps ? `, ${(total / apps).toFixed(0)} B per app over ${apps}` : ""}`);

  // (1) self size by constructor / type.
  const byCtor = new Map<string, { size: number; count: number }>();
  for (const v of rpo) {
    const k = label(v);
    const a = byCtor.get(k) ?? { size: 0, count: 0 };
    a.size += self(v);
    a.count++;
    byCtor.set(k, a);
  }
  console.log("\nself size by constructor (top 25):");
  for (const [k, a] of [...byCtor].sort((x, y) => y[1].size - x[1].size).slice(0, 25)) {
    console.log(`  ${(a.size / 2 ** 20).toFixed(2).padStart(8)} MiB  ${String(a.count).padStart(8)} objects  ${per(a.size).padStart(12)}  ${(a.count / (apps || 1)).toFixed(1).padStart(6)}/app  ${k}`);
  }
  // Retained size by constructor: objects not dominated by another object of the same constructor.
  const retByCtor = new Map<string, { size: number; count: number }>();
  for (const v of rpo) {
    const k = label(v);
    if (k.startsWith("(")) continue;
    let d = idom[v]!;
    let nested = false;
    for (let hops = 0; d !== 0 && hops < 64; hops++, d = idom[d]!) {
      if (label(d) === k) {
        nested = true;
        break;
      }
    }
    if (nested) continue;
    const a = retByCtor.get(k) ?? { size: 0, count: 0 };
    a.size += retained[v]!;
    a.count++;
    retByCtor.set(k, a);
  }
  console.log("\nretained size by constructor (outermost objects of each constructor; top 20):");
  for (const [k, a] of [...retByCtor].sort((x, y) => y[1].size - x[1].size).slice(0, 20)) {
    console.log(`  ${(a.size / 2 ** 20).toFixed(2).padStart(8)} MiB  ${String(a.count).padStart(8)} objects  ${per(a.size).padStart(12)}  ${k}`);
  }
  // (2) owners: big retainers whose dominator is not just a wrapper around them.
  const edgeName = (from: number, to: number) => {
    for (let e = first[from]!; e < first[from + 1]!; e += ef) {
      if (s.edges[e + TO]! / nf !== to) continue;
      const t = edgeTypes[s.edges[e + ET]!];
      return t === "element" || t === "hidden" ? `[${s.edges[e + EN]}]` : s.strings[s.edges[e + EN]!]!;
    }
    return "?";
  };
  console.log("\nlargest owners (retained ≥ 1 % of the heap, dominator retains ≥ 1.5× more), with their path:");
  const owners = rpo.filter((v) => v !== 0 && retained[v]! >= total * 0.01 && retained[idom[v]!]! >= retained[v]! * 1.5).sort((a, b) => retained[b]! - retained[a]!).slice(0, 20);
  for (const v of owners) {
    const chain: string[] = [];
    for (let c = v, hops = 0; c !== 0 && hops < 8; hops++) {
      const d = idom[c]!;
      chain.push(`${label(c)}${d !== 0 ? ` ←${edgeName(d, c)}` : ""}`);
      c = d;
    }
    console.log(`  ${(retained[v]! / 2 ** 20).toFixed(2).padStart(8)} MiB ${per(retained[v]!).padStart(12)}  ${chain.join("  ⟵ ")}`);
  }
}

/** Self size by constructor in one snapshot, plus string contents (for the duplicate count). */
function census(file: string): { byCtor: Map<string, { size: number; count: number }>; strings: Map<string, { size: number; count: number }> } {
  const s = JSON.parse(readFileSync(file, "utf8")) as Snap;
  const nf = s.snapshot.meta.node_fields.length;
  const nodeTypes = s.snapshot.meta.node_types[0];
  const F = s.snapshot.meta.node_fields;
  const TYPE = F.indexOf("type"), NAME = F.indexOf("name"), SELF = F.indexOf("self_size");
  const byCtor = new Map<string, { size: number; count: number }>();
  const strings = new Map<string, { size: number; count: number }>();
  for (let i = 0; i < s.nodes.length; i += nf) {
    const t = nodeTypes[s.nodes[i + TYPE]!]!;
    const size = s.nodes[i + SELF]!;
    const k = t === "object" || t === "closure" || t === "native" ? s.strings[s.nodes[i + NAME]!]!.slice(0, 60) : `(${t})`;
    const a = byCtor.get(k) ?? { size: 0, count: 0 };
    a.size += size;
    a.count++;
    byCtor.set(k, a);
    if (t === "string") {
      const v = s.strings[s.nodes[i + NAME]!]!;
      const b = strings.get(v) ?? { size: 0, count: 0 };
      b.size += size;
      b.count++;
      strings.set(v, b);
    }
  }
  return { byCtor, strings };
}

/** Per-app growth by constructor between two snapshots (N1 < N2 apps), and the duplicated strings of the larger one. */
function diff(f1: string, n1: number, f2: string, n2: number): void {
  const a = census(f1);
  const b = census(f2);
  const dn = n2 - n1;
  const keys = new Set([...a.byCtor.keys(), ...b.byCtor.keys()]);
  const rows = [...keys].map((k) => ({ k, size: (b.byCtor.get(k)?.size ?? 0) - (a.byCtor.get(k)?.size ?? 0), count: (b.byCtor.get(k)?.count ?? 0) - (a.byCtor.get(k)?.count ?? 0) }));
  const total = rows.reduce((t, r) => t + r.size, 0);
  console.log(`growth ${n1} → ${n2} apps: ${(total / dn).toFixed(0)} B per app (self sizes, all nodes)`);
  for (const r of rows.sort((x, y) => y.size - x.size).slice(0, 18)) {
    console.log(`  ${(r.size / dn).toFixed(0).padStart(6)} B/app  ${(r.count / dn).toFixed(2).padStart(7)} objects/app  ${r.k}`);
  }
  let dupBytes = 0;
  let dupCount = 0;
  const dups = [...b.strings].filter(([, v]) => v.count >= n2 / 10);
  for (const [, v] of dups) {
    dupBytes += v.size - v.size / v.count;
    dupCount += v.count - 1;
  }
  console.log(`strings of the ${n2}-app heap whose content occurs ≥ ${n2 / 10} times: ${dups.length} distinct values, ${dupCount} extra copies, ${(dupBytes / n2).toFixed(0)} B/app that one shared copy each would save`);
  for (const [v, x] of dups.sort((p, q) => q[1].size - p[1].size).slice(0, 15)) console.log(`  ${(x.size / n2).toFixed(0).padStart(5)} B/app  ×${x.count}  ${JSON.stringify(v.slice(0, 70))}`);
}

if (mode === "diff") diff(args[0]!, Number(args[1]), args[2]!, Number(args[3]));
else if (mode === "snapshot") await snapshot(args[0] ?? "appclient", Number(args[1] ?? 10_000), args[2] ?? "/tmp/appwatch.heapsnapshot");
else if (mode === "analyze") analyze(args[0]!, Number(args[1] ?? 0));
else throw new Error("usage: heap-profile.ts snapshot <variant> <N> <file> | analyze <file> [N]");
process.exit(0);
