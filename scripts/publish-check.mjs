#!/usr/bin/env node
// Release checks that CI can run (`node scripts/publish-check.mjs`, about 10 s):
//   1. `deno publish --dry-run --allow-dirty`: the JSR package builds (no slow types, right file set),
//      and deno.json's import map covers every bare import of mod.ts and src/ with package.json's ranges;
//   2. examples/node.mjs (Node + tsx) and examples/bun.ts (Bun) exit 0 and print a createEvent;
//   3. deploy/ and the Dockerfile keep their invariants: every manifest parses, the Kustomization
//      lists them, no Namespace but in deploy/namespace/ (deploy/ does not own
//      Flyte's namespace), the Deployment runs non-root with a read-only root filesystem and the right
//      probes and --host 0.0.0.0 (the Dockerfile: ENV APPWATCH_HOST=0.0.0.0; the CLI's default is
//      127.0.0.1), the Service and PDB select its pods, RBAC grants exactly get/list/watch on
//      services.serving.knative.dev and list, watch on revisions.serving.knative.dev;
//   4. a Deno consumer: a scratch project in os.tmpdir() (outside the repo, no deno.json) with a
//      main.ts and a main_test.ts that import mod.ts and src/sandbox/mod.ts by path, as the README
//      says; `deno check --import-map=<repo>/deno.json` type-checks both (strict, Deno's own Node
//      types — stricter than the repo's @types/node), then `deno test` runs the test (the sandbox,
//      AppK8sClient, createApp on loadAdapter()'s Deno server, GET /v1/apps).
// Prints "publish-check: ok", or every failure and exits 1.
//
//   node scripts/publish-check.mjs [publish] [examples] [deploy] [deno-consumer]   # default: all four
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { parseAllDocuments } from "yaml";

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..");
const require = createRequire(import.meta.url);
const DENO = join(ROOT, "node_modules", "deno", "deno");
const failures = [];
const fail = (where, message) => failures.push(`${where}: ${message}`);
const check = (cond, where, message) => {
  if (!cond) fail(where, message);
  return Boolean(cond);
};

const wanted = process.argv.slice(2);
const STEPS = ["publish", "examples", "deploy", "deno-consumer"];
const steps = wanted.length ? wanted : STEPS;
for (const s of steps) {
  if (!STEPS.includes(s)) {
    console.error(`publish-check: unknown step "${s}" (${STEPS.join(", ")})`);
    process.exit(2);
  }
}

function run(cmd, args, timeoutMs, cwd = ROOT) {
  const started = Date.now();
  const r = spawnSync(cmd, args, {
    cwd,
    encoding: "utf8",
    timeout: timeoutMs,
    maxBuffer: 64 * 1024 * 1024,
    env: { ...process.env, NO_COLOR: "1" },
  });
  return { ...r, seconds: ((Date.now() - started) / 1000).toFixed(1) };
}

const tail = (text, lines = 30) => (text ?? "").trim().split("\n").slice(-lines).map((l) => `    ${l}`).join("\n");

// ------------------------------------------------------------------------------------ 1. publish

/** Every .ts file under dir (recursively). */
function tsFiles(dir) {
  const out = [];
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) out.push(...tsFiles(p));
    else if (e.name.endsWith(".ts")) out.push(p);
  }
  return out;
}

// deno.json's import map is what JSR applies at publish and what an outside Deno project passes
// (--import-map): every bare import of the published code must be in it, with package.json's range.
function importMapStep() {
  const W = "deno.json imports";
  const before = failures.length;
  const denoJson = JSON.parse(readFileSync(join(ROOT, "deno.json"), "utf8"));
  const map = denoJson.imports ?? {};
  const pkg = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8"));
  const ranges = { ...pkg.devDependencies, ...pkg.dependencies };
  for (const [key, target] of Object.entries(map)) {
    const m = /^npm:\/?((?:@[^/@]+\/)?[^/@]+)@([^/]+)\/?$/.exec(target);
    if (!check(m, W, `${key}: ${target} is not an npm:name@range specifier`)) continue;
    check(ranges[m[1]] === m[2], W, `${key}: ${target} — package.json has ${m[1]}@${ranges[m[1]] ?? "(none)"}`);
    check(pkg.dependencies?.[m[1]] !== undefined, W, `${key}: ${m[1]} is not a runtime dependency in package.json`);
  }
  const files = [join(ROOT, "mod.ts"), ...tsFiles(join(ROOT, "src"))];
  const bare = new Set();
  for (const f of files) {
    const text = readFileSync(f, "utf8");
    for (const m of text.matchAll(/(?:\bfrom\s+|\bimport\s*\(\s*|^import\s+)"([^"./][^"]*)"/gm)) {
      // (Doc-comment examples import the package by its own name: JSR's or npm's.)
      const own = [denoJson.name, pkg.name].some((name) => m[1] === name || m[1].startsWith(`${name}/`));
      if (!/^(node|npm|jsr|https?):/.test(m[1]) && !own) bare.add(m[1]);
    }
  }
  for (const spec of bare) {
    const covered = spec in map || Object.keys(map).some((k) => k.endsWith("/") && spec.startsWith(k));
    check(covered, W, `"${spec}" (imported by the published code) is not in deno.json's import map`);
  }
  if (failures.length === before) console.log(`publish-check: deno.json import map ok (${Object.keys(map).length} entries, ${bare.size} bare imports, ranges as in package.json)`);
}

function publishStep() {
  importMapStep();
  if (!check(existsSync(DENO), "deno publish", `${DENO} is missing; run npm ci`)) return;
  const r = run(DENO, ["publish", "--dry-run", "--allow-dirty"], 120_000);
  const out = `${r.stdout}\n${r.stderr}`;
  if (r.error || r.status !== 0) {
    // Keep the part that names the problems (file:line and the error kind).
    const problems = out.split("\n").filter((l) => /^(error|warning)|-->|^\s*\d+ \|/.test(l)).join("\n");
    fail("deno publish --dry-run", `exit ${r.status ?? r.error?.message}\n${tail(problems || out, 60)}`);
    return;
  }
  const before = failures.length;
  check(/Success Dry run complete/.test(out), "deno publish --dry-run", `no "Success Dry run complete" line:\n${tail(out)}`);
  const published = out.split("\n").filter((l) => /^\s+file:\/\//.test(l)).map((l) => l.trim().split(" ")[0]);
  for (const bad of ["/tests/", "/bench/", "/node_modules/", "/examples/", "/deploy/", "/scripts/"]) {
    check(!published.some((f) => f.includes(bad)), "deno publish --dry-run", `the package would include ${bad} files`);
  }
  check(published.some((f) => f.endsWith("/mod.ts")), "deno publish --dry-run", "the package would not include mod.ts");
  if (failures.length === before) console.log(`publish-check: deno publish --dry-run ok (${published.length} files, ${r.seconds}s)`);
}

// ----------------------------------------------------------------------------------- 2. examples

function exampleStep() {
  let bun;
  try {
    bun = require.resolve("bun/bin/bun.exe");
  } catch {
    fail("examples/bun.ts", "bun is not installed (npm ci installs it)");
  }
  const examples = [
    { name: "examples/node.mjs", cmd: process.execPath, args: ["--import", "tsx", "examples/node.mjs"] },
    ...(bun ? [{ name: "examples/bun.ts", cmd: bun, args: ["examples/bun.ts"] }] : []),
  ];
  for (const ex of examples) {
    const r = run(ex.cmd, ex.args, 30_000);
    if (r.error?.code === "ETIMEDOUT" || r.signal) {
      fail(ex.name, `did not exit within 30 s (it must stop everything and exit on its own)\n${tail(r.stderr)}`);
      continue;
    }
    if (!check(r.status === 0, ex.name, `exit ${r.status ?? r.error?.message}\n${tail(r.stderr)}`)) continue;
    const lines = r.stdout.split("\n").filter((l) => l.includes("createEvent"));
    if (!check(lines.length > 0, ex.name, `no line with "createEvent" on stdout:\n${tail(r.stdout)}`)) continue;
    for (const l of lines) {
      try {
        JSON.parse(l);
      } catch {
        fail(ex.name, `not a JSON line: ${l.slice(0, 200)}`);
        break;
      }
    }
    console.log(`publish-check: ${ex.name} ok (${lines.length} createEvent lines, ${r.seconds}s)`);
  }
}

// ------------------------------------------------------------------------------------- 3. deploy

/** Every document of every *.yaml under deploy/ (recursively), as { file, obj }. */
function readDeploy() {
  const dir = join(ROOT, "deploy");
  const out = [];
  const walk = (d) => {
    for (const e of readdirSync(d, { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name))) {
      const p = join(d, e.name);
      if (e.isDirectory()) walk(p);
      else if (/\.ya?ml$/.test(e.name)) {
        const rel = p.slice(ROOT.length + 1);
        for (const doc of parseAllDocuments(readFileSync(p, "utf8"))) {
          if (doc.errors.length) {
            fail(rel, `YAML error: ${doc.errors[0].message}`);
            continue;
          }
          const obj = doc.toJS();
          if (obj === null || obj === undefined) continue;
          // The real-cluster harness and `kubectl apply -f deploy/` treat every *.yaml as an object.
          if (check(obj.apiVersion && obj.kind && obj.metadata?.name, rel, "a document without apiVersion/kind/metadata.name")) out.push({ file: rel, obj });
        }
      }
    }
  };
  walk(dir);
  return out;
}

const sameSet = (a, b) => a.length === b.length && [...a].sort().every((x, i) => x === [...b].sort()[i]);

function deployStep() {
  const before = failures.length;
  const objects = readDeploy();
  const find = (kind, name) => objects.find((o) => o.obj.kind === kind && (!name || o.obj.metadata.name === name))?.obj;

  // Kustomization: named `Kustomization` so `kubectl apply -f deploy/` keeps working (see the file).
  const kpath = join(ROOT, "deploy", "Kustomization");
  check(!existsSync(join(ROOT, "deploy", "kustomization.yaml")), "deploy/kustomization.yaml", "must not exist: `kubectl apply -f deploy/` and tests/cluster would apply it as an object; use deploy/Kustomization");
  if (check(existsSync(kpath), "deploy/Kustomization", "missing (kubectl apply -k deploy/)")) {
    const k = parseAllDocuments(readFileSync(kpath, "utf8"))[0]?.toJS() ?? {};
    const top = readdirSync(join(ROOT, "deploy")).filter((f) => /\.ya?ml$/.test(f));
    check(k.kind === "Kustomization", "deploy/Kustomization", `kind is ${k.kind}`);
    check(sameSet(k.resources ?? [], top), "deploy/Kustomization", `resources ${JSON.stringify(k.resources)} must be exactly the top-level manifests ${JSON.stringify(top)} (not crds/)`);
  }

  // deploy/ must not own the `flyte` namespace (Flyte does): `kubectl delete -k deploy/` would
  // delete it with every app in it. Only deploy/namespace/ (applied first where nothing owns it) creates it.
  const ns = "flyte";
  for (const { file, obj } of objects) {
    if (obj.kind === "Namespace") check(file === "deploy/namespace/namespace.yaml", file, `a Namespace (${obj.metadata.name}) outside deploy/namespace/: deploy/ must not own a namespace`);
  }
  const opath = join(ROOT, "deploy", "namespace", "Kustomization");
  if (check(existsSync(opath), "deploy/namespace/Kustomization", "missing (kubectl apply -k deploy/namespace/ creates the namespace)")) {
    const o = parseAllDocuments(readFileSync(opath, "utf8"))[0]?.toJS() ?? {};
    check(o.kind === "Kustomization", "deploy/namespace/Kustomization", `kind is ${o.kind}`);
    check(sameSet((o.resources ?? []).map((r) => r.replace(/\/$/, "")), ["namespace.yaml"]), "deploy/namespace/Kustomization", `resources ${JSON.stringify(o.resources)} must be exactly ["namespace.yaml"]`);
    const nsObj = objects.find((x) => x.file === "deploy/namespace/namespace.yaml")?.obj;
    check(nsObj?.kind === "Namespace" && nsObj.metadata.name === ns, "deploy/namespace/namespace.yaml", `must be the Namespace ${ns}`);
  }
  for (const { file, obj } of objects) {
    if (obj.kind !== "Namespace" && obj.kind !== "CustomResourceDefinition") check(obj.metadata.namespace === ns, file, `${obj.kind}/${obj.metadata.name} is not in namespace ${ns}`);
  }

  // RBAC: exactly what AppK8sClient uses.
  const sa = find("ServiceAccount", "appwatch");
  const role = find("Role", "appwatch-reader");
  const binding = find("RoleBinding", "appwatch-reader");
  check(sa, "deploy/rbac.yaml", "no ServiceAccount appwatch");
  check(!objects.some((o) => ["ClusterRole", "ClusterRoleBinding"].includes(o.obj.kind)), "deploy/rbac.yaml", "no cluster-scoped RBAC expected");
  if (check(role, "deploy/rbac.yaml", "no Role appwatch-reader")) {
    const grants = new Map(); // "group/resource" -> verbs
    for (const r of role.rules ?? []) {
      check(!r.resourceNames && !r.nonResourceURLs, "deploy/rbac.yaml", "unexpected resourceNames/nonResourceURLs");
      for (const g of r.apiGroups ?? []) for (const res of r.resources ?? []) {
        const key = `${g}/${res}`;
        grants.set(key, [...new Set([...(grants.get(key) ?? []), ...(r.verbs ?? [])])]);
      }
    }
    const expected = { "serving.knative.dev/services": ["get", "list", "watch"], "serving.knative.dev/revisions": ["list", "watch"] };
    check(sameSet([...grants.keys()], Object.keys(expected)), "deploy/rbac.yaml", `Role grants ${JSON.stringify([...grants.keys()])}, expected exactly ${JSON.stringify(Object.keys(expected))}`);
    for (const [key, verbs] of Object.entries(expected)) {
      check(sameSet(grants.get(key) ?? [], verbs), "deploy/rbac.yaml", `${key}: verbs ${JSON.stringify(grants.get(key))}, expected exactly ${JSON.stringify(verbs)}`);
    }
  }
  if (check(binding, "deploy/rbac.yaml", "no RoleBinding appwatch-reader")) {
    check(binding.roleRef?.kind === "Role" && binding.roleRef?.name === "appwatch-reader", "deploy/rbac.yaml", "RoleBinding must reference Role appwatch-reader");
    check(binding.subjects?.length === 1 && binding.subjects[0].kind === "ServiceAccount" && binding.subjects[0].name === "appwatch" && binding.subjects[0].namespace === ns, "deploy/rbac.yaml", "RoleBinding must bind exactly ServiceAccount flyte/appwatch");
  }

  // Deployment
  const dep = find("Deployment", "appwatch");
  if (!check(dep, "deploy/deployment.yaml", "no Deployment appwatch")) return;
  const W = "deploy/deployment.yaml";
  const pod = dep.spec?.template?.spec ?? {};
  const podLabels = dep.spec?.template?.metadata?.labels ?? {};
  const matches = (selector) => Object.entries(selector ?? {}).length > 0 && Object.entries(selector).every(([k, v]) => podLabels[k] === v);
  check(matches(dep.spec?.selector?.matchLabels), W, "spec.selector does not match the pod labels");
  check((dep.spec?.replicas ?? 1) >= 2, W, "at least 2 replicas");
  check(pod.serviceAccountName === "appwatch", W, "serviceAccountName must be appwatch");
  check(pod.securityContext?.runAsNonRoot === true, W, "pod securityContext.runAsNonRoot must be true");
  check(pod.securityContext?.runAsUser > 0, W, "pod securityContext.runAsUser must be a non-zero uid");
  check(pod.securityContext?.seccompProfile?.type === "RuntimeDefault", W, "pod seccompProfile must be RuntimeDefault");
  const containers = pod.containers ?? [];
  check(containers.length === 1, W, "exactly one container");
  const c = containers[0] ?? {};
  const sc = c.securityContext ?? {};
  check(sc.readOnlyRootFilesystem === true, W, "readOnlyRootFilesystem must be true");
  check(sc.allowPrivilegeEscalation === false, W, "allowPrivilegeEscalation must be false");
  check(sc.privileged !== true, W, "must not be privileged");
  check((sc.capabilities?.drop ?? []).includes("ALL") && !(sc.capabilities?.add ?? []).length, W, "capabilities must drop ALL and add none");
  check(sc.runAsNonRoot !== false && sc.runAsUser !== 0, W, "the container must not override runAsNonRoot/runAsUser to root");
  const ports = c.ports ?? [];
  const http = ports.find((p) => p.containerPort === 8080);
  check(http, W, "containerPort 8080");
  const portOk = (p) => p === 8080 || (http && p === http.name);
  check(c.livenessProbe?.httpGet?.path === "/healthz" && portOk(c.livenessProbe?.httpGet?.port), W, "livenessProbe must be GET /healthz on 8080");
  check(c.readinessProbe?.httpGet?.path === "/readyz" && portOk(c.readinessProbe?.httpGet?.port), W, "readinessProbe must be GET /readyz on 8080");
  for (const kind of ["requests", "limits"]) {
    check(c.resources?.[kind]?.cpu && c.resources?.[kind]?.memory, W, `resources.${kind} must set cpu and memory`);
  }
  const args = c.args ?? [];
  check(args[0] === "serve", W, `args must start with "serve" (got ${JSON.stringify(args)})`);
  check(args.includes("--port") && args[args.indexOf("--port") + 1] === "8080", W, "args must include --port 8080");
  // The CLI listens on 127.0.0.1 by default; a pod must say every interface itself (the kubelet's probes and the Service reach the pod IP).
  check(args.includes("--host") && args[args.indexOf("--host") + 1] === "0.0.0.0", W, "args must include --host 0.0.0.0 (the CLI's default is 127.0.0.1, unreachable for probes and the Service)");
  // The image runs Node (no cache directory to write); a leftover DENO_DIR would mean a stale manifest.
  check(!(c.env ?? []).some((e) => e.name === "DENO_DIR"), W, "DENO_DIR is set, but the image runs Node (see Dockerfile)");

  // Service and PDB
  const svc = find("Service", "appwatch");
  if (check(svc, "deploy/service.yaml", "no Service appwatch")) {
    check((svc.spec?.type ?? "ClusterIP") === "ClusterIP", "deploy/service.yaml", "type must be ClusterIP");
    check(matches(svc.spec?.selector), "deploy/service.yaml", "selector does not match the Deployment's pods");
    const sp = (svc.spec?.ports ?? [])[0] ?? {};
    check(sp.port === 8080 && portOk(sp.targetPort ?? sp.port), "deploy/service.yaml", "port 8080 -> the container's 8080");
  }
  const pdb = find("PodDisruptionBudget", "appwatch");
  if (check(pdb, "deploy/pdb.yaml", "no PodDisruptionBudget appwatch")) {
    check(pdb.apiVersion === "policy/v1", "deploy/pdb.yaml", "apiVersion policy/v1");
    check(pdb.spec?.minAvailable === 1, "deploy/pdb.yaml", "minAvailable must be 1");
    check(matches(pdb.spec?.selector?.matchLabels), "deploy/pdb.yaml", "selector does not match the Deployment's pods");
  }

  // Dockerfile: non-root, Node under its permission model with listed reads only, the HTTP port.
  const df = readFileSync(join(ROOT, "Dockerfile"), "utf8").replace(/\\\n/g, " ");
  const D = "Dockerfile";
  const user = [...df.matchAll(/^USER\s+(\S+)/gm)].at(-1)?.[1];
  check(user && !/^(root|0)(:|$)/.test(user), D, `the final USER must be non-root (got ${user})`);
  const entry = /^ENTRYPOINT\s+(\[.*\])/m.exec(df)?.[1];
  let argv = [];
  try {
    argv = JSON.parse(entry ?? "null") ?? [];
  } catch {
    fail(D, "ENTRYPOINT must be a JSON array");
  }
  check(argv[0] === "node" && argv.includes("--permission"), D, `ENTRYPOINT must be node --permission (got ${entry})`);
  check(!argv.some((a) => /^--allow-(fs-write|child-process|worker|addons|wasi|inspector)/.test(a)), D, `ENTRYPOINT must not grant writes, child processes, workers, addons, WASI or the inspector (got ${entry})`);
  const reads = argv.filter((a) => a.startsWith("--allow-fs-read=")).map((a) => a.slice("--allow-fs-read=".length));
  check(reads.length > 0 && !reads.some((r) => r === "*" || r === "/" || r === "/*"), D, `ENTRYPOINT must limit --allow-fs-read to listed paths (got ${JSON.stringify(reads)})`);
  check(/^EXPOSE\s+8080\b/m.test(df), D, "EXPOSE 8080");
  // The CLI's default host is 127.0.0.1; the image listens on every interface whatever CMD a `docker run` passes.
  check(/^ENV\b[^\n]*\sAPPWATCH_HOST=0\.0\.0\.0(\s|$)/m.test(df), D, "ENV APPWATCH_HOST=0.0.0.0 (the CLI's default is 127.0.0.1: a published port would reach nothing, even when `docker run` replaces CMD)");
  // The image ships only what runs: Node 24 strips the types itself, so tsx/esbuild (11.5 MB) and
  // typescript (23 MB, valibot's peer for types only) installed by `npm ci --omit=dev` are removed.
  for (const dir of ["node_modules/tsx", "node_modules/esbuild", "node_modules/@esbuild", "node_modules/typescript"]) {
    check(new RegExp(`rm -rf[^\\n]*\\s${dir.replace("/", "\\/")}(\\s|$)`, "m").test(df), D, `the deps stage must remove ${dir} (not used at run time)`);
  }
  check(/^HEALTHCHECK\b.*\/healthz/m.test(df), D, "HEALTHCHECK on /healthz");
  // Docker silently runs a malformed exec-form array as a shell command: make sure each one is JSON.
  for (const [what, re] of [["CMD", /^CMD\s+(\[.*\])\s*$/m], ["HEALTHCHECK CMD", /^HEALTHCHECK\b.*?\sCMD\s+(\[.*\])\s*$/m]]) {
    const text = re.exec(df)?.[1];
    try {
      check(Array.isArray(JSON.parse(text ?? "null")), D, `${what} must be a JSON array`);
    } catch {
      fail(D, `${what} must be a JSON array (got ${text})`);
    }
  }
  if (failures.length === before) console.log(`publish-check: deploy/ and Dockerfile ok (${objects.length} objects)`);
}

// ------------------------------------------------------------------------------- 4. deno-consumer

// What a Deno user writes (README "From a Deno project"): the library by path, the repo's import map.
const consumerMain = (mod, sandbox) => `import { Hono } from "hono";
import { AppK8sClient, createApp, KubeClient, loadAdapter, type WatchResponse } from ${JSON.stringify(mod)};
import { seedDemo, startSandbox } from ${JSON.stringify(sandbox)};

/** The demo apps of a fresh sandbox, read over HTTP from appwatch's API mounted in the consumer's own Hono app. */
export async function listDemoApps(count: number): Promise<string[]> {
  const sb = await startSandbox();
  seedDemo(sb.sandbox, { namespace: "flyte", count });
  const client = new KubeClient({ server: sb.url, namespace: "flyte" });
  const apps = new AppK8sClient({ client, namespace: "flyte" });
  try {
    await apps.startWatching(AbortSignal.timeout(20_000));
    const runtime = await loadAdapter();
    const { app } = createApp({ client: apps, runtime });
    const mine = new Hono().get("/hello", (c) => c.text("hi")).route("/", app);
    const server = await runtime.listen(mine.fetch, { port: 0, hostname: "127.0.0.1" });
    try {
      const res = await fetch(\`\${server.url}/v1/apps\`);
      const body = (await res.json()) as { apps?: { metadata?: { id?: { name?: string } } }[] };
      return (body.apps ?? []).map((a) => a.metadata?.id?.name ?? "");
    } finally {
      await server.close();
    }
  } finally {
    await apps.stopWatching();
    await client.close();
    await sb.close();
  }
}

export type Event = WatchResponse;

if (import.meta.main) console.log(JSON.stringify(await listDemoApps(3)));
`;

const consumerTest = `import { listDemoApps } from "./main.ts";

Deno.test("the demo apps through appwatch's REST API", async () => {
  const names = await listDemoApps(3);
  if (names.length !== 3 || names.some((n) => n === "")) throw new Error(\`expected 3 named apps, got \${JSON.stringify(names)}\`);
});
`;

function denoConsumerStep() {
  const W = "deno consumer";
  if (!check(existsSync(DENO), W, `${DENO} is missing; run npm ci`)) return;
  const dir = mkdtempSync(join(tmpdir(), "appwatch-deno-consumer-"));
  try {
    writeFileSync(join(dir, "main.ts"), consumerMain(join(ROOT, "mod.ts"), pathToFileURL(join(ROOT, "src", "sandbox", "mod.ts")).href));
    writeFileSync(join(dir, "main_test.ts"), consumerTest);
    const map = `--import-map=${join(ROOT, "deno.json")}`;
    const before = failures.length;
    const checked = run(DENO, ["check", map, "main.ts", "main_test.ts"], 180_000, dir);
    if (!check(checked.status === 0, `${W}: deno check ${map} main.ts main_test.ts`, `exit ${checked.status ?? checked.error?.message}\n${tail(`${checked.stdout}\n${checked.stderr}`, 40)}`)) return;
    const tested = run(DENO, ["test", "-A", map, "main_test.ts"], 180_000, dir);
    const out = `${tested.stdout}\n${tested.stderr}`;
    check(tested.status === 0 && /ok \| 1 passed \| 0 failed/.test(out), `${W}: deno test -A ${map} main_test.ts`, `exit ${tested.status ?? tested.error?.message}, expected "ok | 1 passed | 0 failed":\n${tail(out, 40)}`);
    if (failures.length === before) console.log(`publish-check: a Deno consumer outside the repo type-checks (deno check, ${checked.seconds}s) and tests (deno test, ${tested.seconds}s) ok`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const started = Date.now();
if (steps.includes("publish")) publishStep();
if (steps.includes("examples")) exampleStep();
if (steps.includes("deploy")) deployStep();
if (steps.includes("deno-consumer")) denoConsumerStep();

if (failures.length) {
  console.error(`publish-check: FAILED (${failures.length})`);
  for (const f of failures) console.error(`  - ${f}`);
  process.exit(1);
}
console.log(`publish-check: ok (${((Date.now() - started) / 1000).toFixed(1)}s)`);
