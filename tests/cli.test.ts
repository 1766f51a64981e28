import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { delimiter, join } from "node:path";
import process from "node:process";
import { chooseCluster, ClusterChoiceError, EVENTS_HELP, formatEvent, HELP, parseCli, runCli, SERVE_HELP, UsageError, WATCH_HELP } from "../src/cli.ts";
import { runtimeName } from "../src/runtime.ts";
import { DEFAULT_URL } from "../src/client/options.ts";
import { describeStart } from "../src/client/watch.ts";
import { seedDemo, startSandbox } from "../src/sandbox/mod.ts";
import { startScripted, status } from "./helpers/scripted.ts";
import { runtimeCommand } from "./helpers/runtime-command.ts";
import { Wakes } from "./helpers/wakes.ts";

const DEFAULT_URL_TEXT = DEFAULT_URL;

describe("appwatch events options", () => {
  test("defaults", () => {
    const o = parseCli([]);
    // Optional settings (kubeconfig, context, sandboxPort) are absent unless set.
    assert.deepEqual(o, {
      help: false, demoIntervalMs: 2000,
      namespaces: [], selector: "flyte.org/app-managed=true", initialList: "auto", idleTimeoutSeconds: 60,
      output: "events", logLevel: "info",
    });
  });

  test("namespaces repeat and split on commas; numbers are parsed", () => {
    const o = parseCli(["-n", "a,b", "--namespace", "c", "--idle-timeout", "2.5", "--sandbox-port", "8001", "-o", "objects"]);
    assert.deepEqual(o.namespaces, ["a", "b", "c"]);
    assert.equal(o.idleTimeoutSeconds, 2.5);
    assert.equal(o.sandboxPort, 8001);
    assert.equal(o.output, "objects");
  });

  test("bad input gets a clear error naming the flag", () => {
    assert.throws(() => parseCli(["--namespace", "Bad_NS"]), (e: unknown) => e instanceof UsageError && /--namespace: "Bad_NS": a namespace is a DNS label/.test(e.message));
    assert.throws(() => parseCli(["--initial-list", "fast"]), /--initial-list: must be auto, streaming or paginated/);
    assert.throws(() => parseCli(["--idle-timeout=-1"]), /--idle-timeout: must be a number of seconds/);
    assert.throws(() => parseCli(["--idle-timeout", "abc"]), /--idle-timeout: must be a number of seconds/);
    assert.throws(() => parseCli(["--bogus"]), (e: unknown) => e instanceof UsageError && /Unknown option '--bogus'/.test(e.message));
  });

  test("events --help prints its usage and exits 0; a usage error exits 2", async () => {
    const out: string[] = [];
    const err: string[] = [];
    const io = { stdout: (l: string) => out.push(l), stderr: (l: string) => err.push(l), signal: new AbortController().signal };
    assert.equal(await runCli(["events", "--help"], io), 0);
    assert.equal(out.join("\n"), EVENTS_HELP);
    assert.equal(await runCli(["events", "-o", "yaml"], io), 2);
    assert.match(err.join("\n"), /^appwatch events: --output: must be events or objects; got "yaml"\nRun appwatch events --help for usage\.$/);
  });

  test("event lines", () => {
    const obj = { metadata: { name: "a", namespace: "flyte", resourceVersion: "5" } };
    const { time, ...rest } = JSON.parse(formatEvent({ type: "deleted", object: obj, inferred: true }, "events", 0));
    assert.match(time, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    assert.deepEqual(rest, { type: "deleted", namespace: "flyte", name: "a", resourceVersion: "5", inferred: true });
    const full = JSON.parse(formatEvent({ type: "added", object: obj }, "objects", 1));
    assert.deepEqual(full.object, obj);
    const synced = JSON.parse(formatEvent({ type: "synced", phase: "resync", resourceVersion: "9", cause: "expired" }, "events", 3));
    assert.deepEqual([synced.type, synced.phase, synced.objects, synced.cause], ["synced", "resync", 3, "expired"]);
  });
});

describe("choosing the cluster: never demo data by accident", () => {
  let root = "";
  const dirs = async () => {
    root = await mkdtemp(join(tmpdir(), "appwatch-choose-"));
    const empty = join(root, "empty-home");
    const withConfig = join(root, "home");
    await mkdir(join(withConfig, ".kube"), { recursive: true });
    await mkdir(empty, { recursive: true });
    await writeFile(join(withConfig, ".kube", "config"), "apiVersion: v1\nkind: Config\n");
    return { empty, withConfig };
  };
  const choiceError = (fn: () => unknown): string => {
    try {
      fn();
    } catch (err) {
      assert.ok(err instanceof ClusterChoiceError, String(err));
      return err.message;
    }
    return assert.fail("expected a ClusterChoiceError");
  };

  test("the sandbox only when asked or when no cluster configuration exists at all", async () => {
    const { empty, withConfig } = await dirs();
    try {
      const inPod = { KUBERNETES_SERVICE_HOST: "10.0.0.1", KUBERNETES_SERVICE_PORT: "443" };
      assert.deepEqual(chooseCluster({}, { HOME: empty }), { kind: "sandbox", why: "no-config" });
      assert.deepEqual(chooseCluster({ sandbox: true }, { HOME: withConfig }), { kind: "sandbox", why: "asked" });
      assert.deepEqual(chooseCluster({}, { HOME: withConfig }), { kind: "cluster" });
      assert.deepEqual(chooseCluster({}, { HOME: empty, ...inPod }), { kind: "cluster" });
      assert.deepEqual(chooseCluster({ kubeconfig: "/nowhere" }, { HOME: empty }), { kind: "cluster" }, "a named file: the loader says it is missing");
      assert.deepEqual(chooseCluster({ context: "prod" }, { HOME: empty }), { kind: "cluster" });
      const kc = join(withConfig, ".kube", "config");
      assert.deepEqual(chooseCluster({}, { HOME: empty, KUBECONFIG: [join(root, "gone"), kc].join(delimiter) }), { kind: "cluster" }, "one existing file is enough");
      // client-go falls back to in-cluster when every KUBECONFIG file is missing.
      assert.deepEqual(chooseCluster({}, { HOME: empty, KUBECONFIG: join(root, "gone"), ...inPod }), { kind: "cluster" });
    } finally {
      await rm(root, { recursive: true, force: true });
    }
  });

  test("KUBECONFIG naming only missing files is an error naming them and --sandbox, with or without ~/.kube/config", async () => {
    const { empty, withConfig } = await dirs();
    try {
      const gone = [join(root, "gone-a"), join(root, "gone-b")];
      for (const home of [empty, withConfig]) {
        for (const sandbox of [undefined, false]) {
          const msg = choiceError(() => chooseCluster({ ...(sandbox === undefined ? {} : { sandbox }) }, { HOME: home, KUBECONFIG: gone.join(delimiter) }));
          assert.match(msg, new RegExp(`^KUBECONFIG names only missing files: ${gone.join(", ").replace(/[\\/.]/g, "\\$&")}\\.`));
          assert.match(msg, /pass --sandbox/);
        }
      }
      assert.match(choiceError(() => chooseCluster({}, { HOME: empty, KUBECONFIG: delimiter })), /^KUBECONFIG \(".*"\) names no file/);
    } finally {
      await rm(root, { recursive: true, force: true });
    }
  });

  test("sandbox=false turns the fallback off: no cluster configuration is then an error, not demo data", async () => {
    const { empty, withConfig } = await dirs();
    try {
      assert.match(choiceError(() => chooseCluster({ sandbox: false }, { HOME: empty })), /^no cluster configuration found \(KUBECONFIG is unset, .*empty-home\/\.kube\/config does not exist, not running in a pod\) and the sandbox is turned off/);
      assert.deepEqual(chooseCluster({ sandbox: false }, { HOME: withConfig }), { kind: "cluster" });
    } finally {
      await rm(root, { recursive: true, force: true });
    }
  });

  test("--no-sandbox, --sandbox=false, APPWATCH_SANDBOX=false and sandbox: false in the file all say false; serve and events then exit 2", async () => {
    const { empty } = await dirs();
    try {
      const readFile = (p: string) => {
        if (p === "/off.yaml") return "sandbox: false\n";
        if (p === "/on.yaml") return "sandbox: true\n";
        throw Object.assign(new Error("ENOENT"), { code: "ENOENT" });
      };
      const forms: [string[], Record<string, string>][] = [
        [["--no-sandbox"], {}],
        [["--sandbox=false"], {}],
        [["--sandbox=no"], {}],
        [[], { APPWATCH_SANDBOX: "false" }],
        [[], { APPWATCH_SANDBOX: "0" }],
        [["--config", "/off.yaml"], {}],
        [["--no-sandbox"], { APPWATCH_SANDBOX: "true" }], // flags over the environment
        [["--config", "/on.yaml"], { APPWATCH_SANDBOX: "off" }], // the environment over the file
      ];
      for (const [argv, env] of forms) {
        const label = `${argv.join(" ")} ${JSON.stringify(env)}`;
        assert.equal(parseCli(argv, env, readFile).sandbox, false, label);
        for (const command of ["serve", "events"]) {
          const out: string[] = [];
          const err: string[] = [];
          const code = await runCli([command, ...argv], { stdout: (l) => out.push(l), stderr: (l) => err.push(l), signal: new AbortController().signal, env: { ...env, HOME: empty }, readFile });
          assert.equal(code, 2, `${command} ${label}: ${err.join("\n")}`);
          assert.match(err.join("\n"), /no cluster configuration found .* the sandbox is turned off/, label);
          assert.ok(!err.join("\n").includes("SANDBOX MODE"), label);
        }
      }
      assert.equal(parseCli(["--sandbox=true"], {}).sandbox, true);
      assert.equal(parseCli(["--sandbox=yes"], {}).sandbox, true);
      assert.equal(parseCli(["--no-sandbox", "--no-sandbox"], {}).sandbox, false, "repeating one form is fine");
      assert.equal(parseCli([], {}).sandbox, undefined, "unset: auto");
      assert.throws(() => parseCli(["--sandbox=maybe"], {}), /--sandbox: must be true or false; got "maybe"/);
      assert.throws(() => parseCli(["--no-sandbox=true"], {}), /--no-sandbox: takes no value/);
      assert.throws(() => parseCli(["--sandbox", "--no-sandbox"], {}), /--sandbox: --no-sandbox contradicts an earlier --sandbox/);
      assert.throws(() => parseCli([], { APPWATCH_SANDBOX: "nope" }), /APPWATCH_SANDBOX: must be true or false; got "nope"/);
      assert.throws(() => parseCli(["--config", "/bad.yaml"], {}, (p) => (p === "/bad.yaml" ? "sandbox: maybe\n" : "")), /\/bad\.yaml: sandbox: must be true or false; got "maybe"/);
      // A value of another flag that looks like --no-sandbox is that flag's value, not the switch.
      assert.throws(() => parseCli(["--kubeconfig", "--no-sandbox"], {}), (e: unknown) => e instanceof UsageError);
    } finally {
      await rm(root, { recursive: true, force: true });
    }
  });

  test("appwatch watch's human output says SANDBOX when the start frame does", () => {
    assert.equal(describeStart({ mode: "snapshot", apps: 6, sandbox: true }), "snapshot (6 apps)  SANDBOX: demo data, not a real cluster");
    assert.equal(describeStart({ mode: "resumed", replayed: 2, sandbox: true }), "resumed (2 replayed)  SANDBOX: demo data, not a real cluster");
    assert.equal(describeStart({ mode: "snapshot", apps: 1 }), "snapshot (1 app)");
    assert.equal(describeStart({ mode: "live" }), "live (no snapshot)");
  });

  test("serve with KUBECONFIG naming a missing file exits 2 and says so; no demo data, nothing listens", async () => {
    const { withConfig } = await dirs();
    try {
      const out: string[] = [];
      const err: string[] = [];
      const missing = join(root, "typo", "config");
      const code = await runCli(["--port", "0", "--host", "127.0.0.1"], { stdout: (l) => out.push(l), stderr: (l) => err.push(l), signal: new AbortController().signal, env: { HOME: withConfig, KUBECONFIG: missing } });
      assert.equal(code, 2, err.join("\n"));
      const text = err.join("\n");
      assert.ok(text.includes(`appwatch: KUBECONFIG names only missing files: ${missing}.`), text);
      assert.match(text, /pass --sandbox/);
      assert.ok(!text.includes("SANDBOX MODE") && !text.includes("appwatch listening"), text);
    } finally {
      await rm(root, { recursive: true, force: true });
    }
  });
});

describe("subcommands", () => {
  function io(env: Record<string, string | undefined> = {}) {
    const out: string[] = [];
    const err: string[] = [];
    return { out, err, io: { stdout: (l: string) => out.push(l), stderr: (l: string) => err.push(l), signal: new AbortController().signal, env } };
  }

  test("help: appwatch --help and serve --help show the serve help (with the subcommands); watch and events have their own", async () => {
    for (const [argv, text] of [[["--help"], SERVE_HELP], [["-h"], SERVE_HELP], [["serve", "--help"], SERVE_HELP], [["help"], SERVE_HELP], [["watch", "--help"], WATCH_HELP], [["help", "watch"], WATCH_HELP], [["events", "-h"], EVENTS_HELP]] as const) {
      const r = io();
      assert.equal(await runCli([...argv], r.io), 0, argv.join(" "));
      assert.equal(r.out.join("\n"), text, argv.join(" "));
      assert.deepEqual(r.err, []);
    }
    assert.equal(HELP, SERVE_HELP);
    assert.match(SERVE_HELP, /appwatch \[serve\] \[options\]/);
    assert.match(SERVE_HELP, /appwatch watch \[options\]/);
    assert.match(SERVE_HELP, /appwatch events \[options\]/);
    for (const flag of ["--url", "--token", "--org", "--project", "--domain", "--app", "--no-snapshot", "--resume", "--output", "--verbose", "--idle-timeout", "APPWATCH_URL", "APPWATCH_TOKEN", DEFAULT_URL_TEXT]) {
      assert.ok(WATCH_HELP.includes(flag), `watch help lacks ${flag}`);
    }
  });

  test("usage and configuration errors exit 2 naming the flag or variable; no service is started", async () => {
    const cases: [string[], Record<string, string>, RegExp][] = [
      [["bogus"], {}, /unknown command "bogus"/],
      [["-o", "yaml"], {}, /Unknown option '-o'/], // the event printer's flag is not a serve flag
      [["--port", "http"], {}, /--port: must be a port number/],
      [["serve"], { APPWATCH_SLOW_CONSUMER: "block" }, /APPWATCH_SLOW_CONSUMER: must be coalesce, drop or disconnect/],
      [["serve", "--config", "/definitely/not/here.yaml"], {}, /--config: cannot read the config file \/definitely\/not\/here\.yaml: no such file/],
      [["watch", "--app", "x"], {}, /appwatch watch: --app: needs --project and --domain/],
      [["serve", "--cluster-org", "acme"], {}, /--cluster-org: needs --cluster-name/],
      [["serve"], { APPWATCH_CLUSTER_NAME: "-east" }, /APPWATCH_CLUSTER_NAME: must be letters, digits/],
      [["watch", "--project", "p"], {}, /--project: --project and --domain go together/],
      [["watch", "-o", "yaml"], {}, /--output: must be human or json/],
      [["watch"], { APPWATCH_URL: "ftp://x" }, /APPWATCH_URL: must be an http\(s\):\/\/ or ws\(s\):\/\/ URL/],
      [["watch", "--idle-timeout", "0"], {}, /--idle-timeout: must be at least 1 second/],
      [["watch", "stray"], {}, /positional argument/i],
    ];
    for (const [argv, env, re] of cases) {
      const r = io(env);
      assert.equal(await runCli(argv, r.io), 2, argv.join(" "));
      assert.match(r.err.join("\n"), re, argv.join(" "));
      assert.deepEqual(r.out, []);
    }
  });

  test("serve: returns 1 when the cluster has no Knative (the watch can never work)", async () => {
    const server = await startScripted();
    const dir = await mkdtemp(join(tmpdir(), "appwatch-kc-"));
    try {
      const kubeconfig = join(dir, "config");
      await writeFile(kubeconfig, `apiVersion: v1
kind: Config
clusters: [{name: s, cluster: {server: "${server.url}"}}]
users: [{name: u, user: {}}]
contexts: [{name: c, context: {cluster: s, user: u, namespace: flyte}}]
current-context: c
`);
      server.fallback = status(404, "NotFound", { message: "the server could not find the requested resource" });
      const r = io();
      const code = await runCli(["serve", "--kubeconfig", kubeconfig, "--port", "0", "--host", "127.0.0.1"], r.io);
      assert.equal(code, 1, r.err.join("\n"));
      assert.match(r.err.join("\n"), /"msg":"appwatch cannot watch Flyte apps; exiting".*Knative Serving is not installed/);
    } finally {
      await server.close();
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe("a real cluster says it is not the sandbox", () => {
  test("serve --kubeconfig: /readyz without a sandbox note, appwatch_sandbox 0, /v1/info names the API server and namespace, start frames carry no sandbox field", async () => {
    const api = await startSandbox({});
    seedDemo(api.sandbox, { namespace: "team", count: 2 });
    const dir = await mkdtemp(join(tmpdir(), "appwatch-kc-"));
    const stop = new AbortController();
    let run: Promise<number> | undefined;
    try {
      const kubeconfig = join(dir, "config");
      await writeFile(kubeconfig, `apiVersion: v1
kind: Config
clusters: [{name: s, cluster: {server: "${api.url}"}}]
users: [{name: u, user: {}}]
contexts: [{name: c, context: {cluster: s, user: u, namespace: team}}]
current-context: c
`);
      const lines: string[] = [];
      let onReady: (url: string) => void = () => {};
      const ready = new Promise<string>((resolve) => (onReady = resolve));
      const stderr = (l: string) => {
        lines.push(l);
        if (l.includes('"initial sync done; ready"')) onReady(JSON.parse(lines.find((x) => x.includes('"appwatch listening"'))!).url);
      };
      run = runCli(["--kubeconfig", kubeconfig, "--port", "0", "--host", "127.0.0.1"], { stdout: () => {}, stderr, signal: stop.signal, env: {} });
      const url = await Promise.race([ready, run.then((code) => assert.fail(`serve exited ${code}: ${lines.join("\n")}`))]);
      assert.deepEqual(await (await fetch(`${url}/readyz`)).json(), { status: "ready" });
      assert.match(await (await fetch(`${url}/metrics`)).text(), /^appwatch_sandbox 0$/m);
      assert.deepEqual(await (await fetch(`${url}/v1/info`)).json(), { cluster: { host: new URL(api.url).host, namespaces: ["team"] }, sandbox: false });
      const sse = await fetch(`${url}/v1/watch`, { headers: { accept: "text/event-stream" } });
      const reader = sse.body!.getReader();
      let text = "";
      const startBlock = () => text.split("\n\n").find((b) => b.startsWith("event: start\n") && text.includes(`${b}\n\n`));
      while (!startBlock()) text += new TextDecoder().decode((await reader.read()).value);
      await reader.cancel();
      assert.equal(startBlock(), 'event: start\ndata: {"start":{"mode":"snapshot","apps":2}}');
      assert.ok(!lines.some((l) => l.includes("SANDBOX MODE")));
    } finally {
      stop.abort();
      if (run) assert.equal(await run, 0);
      await api.close();
      await rm(dir, { recursive: true, force: true });
    }
  });
});

/** Runs src/main.ts on the current runtime as a child process. */
function spawnCli(args: string[], env: Record<string, string | undefined>) {
  const [cmd, argv] = runtimeCommand(new URL("../src/main.ts", import.meta.url).pathname, args);
  const child = spawn(cmd, argv, { env: env as NodeJS.ProcessEnv, stdio: ["ignore", "pipe", "pipe"] });
  const stdout: string[] = [];
  let stderr = "";
  let buf = "";
  // `until` re-checks its condition when the child writes or exits: its output is the signal.
  const wakes = new Wakes(() => `\nstdout:\n${stdout.join("\n")}\nstderr:\n${stderr}`);
  const wake = () => wakes.wake();
  child.stdout!.on("data", (d: Buffer) => {
    buf += d.toString();
    const lines = buf.split("\n");
    buf = lines.pop()!;
    stdout.push(...lines.filter(Boolean));
    wake();
  });
  child.stderr!.on("data", (d: Buffer) => {
    stderr += d.toString();
    wake();
  });
  const exitCode = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
  // "close": the child has exited and its stdout and stderr are read to the end (nothing more can come).
  child.on("close", () => wakes.end("the CLI ended its output"));
  // A clean shutdown exits 0 and logs "stopped". (Deno's node:child_process reports a child that
  // handled SIGTERM/SIGINT and exited 0 as killed by that signal, so there the log line is the proof.)
  const exited = exitCode.then((code) => (code === null && runtimeName() === "deno" && /"msg":"stopped"/.test(stderr) ? 0 : code));
  // A guard against hangs (the child never writes what is awaited), not a timing assertion.
  const until = (pred: () => boolean, what: string, ms = 20_000) => wakes.until(pred, what, ms);
  return { child, stdout, stderr: () => stderr, exited, until };
}

const events = (lines: string[]) => lines.map((l) => JSON.parse(l) as { type: string; name?: string; objects?: number });

describe("CLI end to end (a child process on this runtime)", () => {
  test("events: with no cluster config it warns, starts the sandbox, prints the demo apps and a synced line; SIGTERM exits 0", async () => {
    const home = await mkdtemp(join(tmpdir(), "appwatch-home-"));
    const env = { ...process.env, HOME: home, KUBECONFIG: undefined, KUBERNETES_SERVICE_HOST: undefined, NO_COLOR: "1" };
    const cli = spawnCli(["events"], env);
    try {
      await cli.until(() => cli.stdout.some((l) => l.includes('"synced"')), "synced");
      const ev = events(cli.stdout);
      // The same sandbox as serve's (the CLI chooses it in one place): 6 demo apps, the SANDBOX MODE line.
      assert.equal(ev.filter((e) => e.type === "added").length, 6);
      assert.equal(ev.find((e) => e.type === "synced")!.objects, 6);
      assert.match(cli.stderr(), /SANDBOX MODE: no cluster configuration found/);
      cli.child.kill("SIGTERM");
      assert.equal(await cli.exited, 0);
    } finally {
      cli.child.kill("SIGKILL");
      await rm(home, { recursive: true, force: true });
    }
  });

  test("appwatch (no subcommand) serves: sandbox without cluster config, settings from APPWATCH_*; appwatch watch follows it; both stop on a signal with 0", async () => {
    const home = await mkdtemp(join(tmpdir(), "appwatch-home-"));
    const env = {
      ...process.env, HOME: home, KUBECONFIG: undefined, KUBERNETES_SERVICE_HOST: undefined, NO_COLOR: "1",
      APPWATCH_PORT: "0", APPWATCH_HOST: "127.0.0.1", APPWATCH_DEMO_INTERVAL_MS: "0", APPWATCH_AUTH_TOKENS: "e2e-secret-token",
    };
    const server = spawnCli([], env);
    let watcher: ReturnType<typeof spawnCli> | undefined;
    try {
      await server.until(() => /"msg":"initial sync done; ready"/.test(server.stderr()), "ready");
      assert.match(server.stderr(), /SANDBOX MODE: no cluster configuration found/);
      const url = JSON.parse(server.stderr().split("\n").find((l) => l.includes('"appwatch listening"'))!).url as string;
      assert.match(url, /^http:\/\/127\.0\.0\.1:\d+$/);
      const apps = await fetch(`${url}/v1/apps`, { headers: { authorization: "Bearer e2e-secret-token" } });
      assert.equal(((await apps.json()) as { apps: unknown[] }).apps.length, 6);
      // Every surface says the data is the sandbox's.
      const ready = await fetch(`${url}/readyz`);
      assert.equal(ready.status, 200);
      assert.deepEqual(await ready.json(), { status: "ready", sandbox: true, note: "SANDBOX MODE: demo apps from the built-in fake Kubernetes API, not a real cluster" });
      assert.match(await (await fetch(`${url}/metrics`)).text(), /^appwatch_sandbox 1$/m);
      const info = await (await fetch(`${url}/v1/info`, { headers: { authorization: "Bearer e2e-secret-token" } })).json() as { cluster: { host: string; namespaces: string[] }; sandbox: boolean };
      assert.equal(info.sandbox, true);
      assert.deepEqual(info.cluster.namespaces, ["flyte"]);
      assert.match(info.cluster.host, /^127\.0\.0\.1:\d+$/);
      assert.equal((await fetch(`${url}/v1/info`)).status, 401, "/v1/info is behind the bearer token like every /v1 route");

      watcher = spawnCli(["watch", "--url", url, "-o", "json", "--project", "llm", "--domain", "development"], { ...process.env, NO_COLOR: "1", APPWATCH_TOKEN: "e2e-secret-token" });
      await watcher.until(() => watcher!.stdout.some((l) => l.includes('"synced"')), "the watch client's snapshot");
      assert.deepEqual(JSON.parse(watcher.stdout[0]!), { start: { mode: "snapshot", apps: 1, sandbox: true } });
      watcher.child.kill("SIGINT");
      assert.equal(await watcher.exited, 0);
      assert.match(watcher.stderr(), /"msg":"stopped","resume":"/);

      assert.ok(!server.stderr().includes("e2e-secret-token"), "token leaked to logs");
      assert.match(server.stderr(), /"auth":"1 bearer token\(s\)"/);
      server.child.kill("SIGTERM");
      assert.equal(await server.exited, 0);
      assert.match(server.stderr(), /"msg":"stopped"/);
    } finally {
      watcher?.child.kill("SIGKILL");
      server.child.kill("SIGKILL");
      await rm(home, { recursive: true, force: true });
    }
  });

  test("events --kubeconfig with a bearer token: watches the cluster it names, sees live changes, never logs the token", async () => {
    const { sandbox, url, close } = await startSandbox({ token: "cli-secret-token" });
    const dir = await mkdtemp(join(tmpdir(), "appwatch-kc-"));
    const kubeconfig = join(dir, "config");
    await writeFile(kubeconfig, `apiVersion: v1
kind: Config
clusters: [{name: sb, cluster: {server: "${url}"}}]
users: [{name: u, user: {token: cli-secret-token}}]
contexts: [{name: c, context: {cluster: sb, user: u, namespace: team}}]
current-context: c
`);
    const ksvc = (name: string) => ({ apiVersion: "serving.knative.dev/v1", kind: "Service", metadata: { name, namespace: "team", labels: { "flyte.org/app-managed": "true" } }, spec: {} });
    sandbox.create("services", ksvc("one"));
    const cli = spawnCli(["events", "--kubeconfig", kubeconfig, "--log-level", "debug"], { ...process.env, NO_COLOR: "1" });
    try {
      await cli.until(() => cli.stdout.some((l) => l.includes('"synced"')), "synced");
      sandbox.create("services", ksvc("two"));
      await cli.until(() => cli.stdout.some((l) => l.includes('"two"')), "live event");
      assert.deepEqual(events(cli.stdout).map((e) => `${e.type} ${e.name ?? ""}`.trim()), ["added one", "synced", "added two"]);
      assert.ok(!cli.stderr().includes("cli-secret-token"), "token leaked to logs");
      assert.ok(sandbox.requests.every((r) => r.path.includes("/namespaces/team/")), "watched the context's namespace");
      cli.child.kill("SIGINT");
      assert.equal(await cli.exited, 0);
    } finally {
      cli.child.kill("SIGKILL");
      await close();
      await rm(dir, { recursive: true, force: true });
    }
  });
});
