/**
 * Errors that name their cause (issue 24): a busy port found before anything
 * starts, a broken YAML config, an unparsable or missing kubeconfig, `/readyz` and a refused
 * stream giving the last watch error, the help command under npm, `--version`.
 */
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { createServer, type Server } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { helpCommand, runCli, SERVE_HELP, versionLine } from "../src/cli.ts";
import { createLogger } from "../src/log.ts";
import { connectCluster, type RunningService, startService } from "../src/service/server.ts";
import { VERSION } from "../src/version.ts";
import { freePort, writeKubeconfig } from "./helpers/restartable-sandbox.ts";
import { eventually, testSettings } from "./helpers/service.ts";

/** `runCli` with captured output; `env` replaces the process's. */
async function cli(argv: string[], env: Record<string, string | undefined> = {}, readFile?: (path: string) => string) {
  const out: string[] = [];
  const err: string[] = [];
  const code = await runCli(argv, { stdout: (l) => out.push(l), stderr: (l) => err.push(l), signal: new AbortController().signal, env, ...(readFile ? { readFile } : {}) });
  return { code, out: out.join("\n"), err: err.join("\n") };
}

/** A TCP listener on 127.0.0.1 holding a port. */
function holdPort(): Promise<{ port: number; server: Server }> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => resolve({ port: (server.address() as { port: number }).port, server }));
  });
}

const close = (server: Server) => new Promise<void>((resolve) => server.close(() => resolve()));

describe("errors that name their cause", () => {
  test("a busy port: one plain line before anything starts, exit 2", async () => {
    const { port, server } = await holdPort();
    try {
      const r = await cli(["--sandbox", "--port", String(port)]);
      assert.equal(r.code, 2, r.err);
      assert.equal(r.err, `appwatch: port ${port} is in use; pass --port <port> (0: any free port), or stop what listens there`);
      const g = await cli(["--sandbox", "--port", "0", "--grpc-port", String(port)]);
      assert.equal(g.code, 2, g.err);
      assert.equal(g.err, `appwatch: port ${port} (--grpc-port) is in use; pass --grpc-port <port> (0: any free port), or stop what listens there`);
    } finally {
      await close(server);
    }
  });

  test("a broken YAML config file: the file, the line and column, and the problem (no dangling colon, no source echoed)", async () => {
    const files: Record<string, string> = { "/c/appwatch.yaml": "port: 8080\nauthTokens: [secret-token\nhost: x\n", "/c/nested.yaml": "a: b: c\n" };
    const readFile = (p: string) => files[p] ?? assert.fail(`unexpected read of ${p}`);
    const r = await cli(["--config", "/c/appwatch.yaml"], {}, readFile);
    assert.equal(r.code, 2);
    assert.equal(r.err.split("\n")[0], "appwatch: /c/appwatch.yaml: not valid YAML at line 3, column 1: Flow sequence in block collection must be sufficiently indented and end with a ]");
    assert.ok(!r.err.includes("secret-token"), r.err);
    const n = await cli(["--config", "/c/nested.yaml"], {}, readFile);
    assert.equal(n.err.split("\n")[0], "appwatch: /c/nested.yaml: not valid YAML at line 1, column 4: Nested mappings are not allowed in compact mappings");
  });

  test("an unparsable or missing kubeconfig, by --kubeconfig or KUBECONFIG: `appwatch: …`, exit 2, no log line", async () => {
    const dir = await mkdtemp(join(tmpdir(), "appwatch-edges-kc-"));
    try {
      const broken = join(dir, "config");
      await writeFile(broken, "apiVersion: v1\nclusters: [\n");
      const missing = join(dir, "nope");
      const cases: [string, string[], Record<string, string>, string][] = [
        ["--kubeconfig, unparsable", ["--kubeconfig", broken, "--port", "0"], {}, `appwatch: kubeconfig ${broken}: not valid YAML at line 3, column 1: `],
        ["KUBECONFIG, unparsable", ["--port", "0"], { KUBECONFIG: broken }, `appwatch: kubeconfig ${broken}: not valid YAML at line 3, column 1: `],
        ["--kubeconfig, missing", ["--kubeconfig", missing, "--port", "0"], {}, `appwatch: kubeconfig ${missing}: cannot read file (ENOENT)`],
        ["KUBECONFIG, missing", ["--port", "0"], { KUBECONFIG: missing, HOME: dir }, `appwatch: KUBECONFIG names only missing files: ${missing}.`],
        ["events --kubeconfig, unparsable", ["events", "--kubeconfig", broken], {}, `appwatch events: kubeconfig ${broken}: not valid YAML at line 3, column 1: `],
      ];
      for (const [what, argv, env, start] of cases) {
        const r = await cli(argv, env);
        assert.equal(r.code, 2, `${what}: ${r.err}`);
        const plain = r.err.split("\n").filter((l) => !l.startsWith("{"));
        assert.equal(plain.length, 1, `${what}: ${r.err}`);
        assert.ok(plain[0]!.startsWith(start), `${what}: ${plain[0]}`);
        assert.ok(!/"level":"error"/.test(r.err), `${what}: an error log line: ${r.err}`);
      }
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  test("/readyz and a refused stream give the last watch error while the initial sync cannot finish", async () => {
    const kc = await writeKubeconfig(`http://127.0.0.1:${await freePort()}`); // nothing listens there
    let s: RunningService | undefined;
    try {
      s = await startService(testSettings(), { logger: createLogger({ level: "error", sink: () => {} }), cluster: await connectCluster({ kubeconfig: kc.path, namespaces: ["flyte"] }) });
      const url = s.url;
      let body: { status?: string; reason?: string; lastError?: string } = {};
      await eventually(async () => {
        body = await (await fetch(`${url}/readyz`)).json();
        return body.lastError !== undefined;
      }, () => `a lastError in /readyz: ${JSON.stringify(body)}`, 20_000);
      assert.equal(body.status, "not ready");
      assert.match(body.lastError!, /cannot reach the Kubernetes API at http:\/\/127\.0\.0\.1:\d+\/.*ECONNREFUSED/);
      const sse = await fetch(`${url}/v1/watch`, { headers: { accept: "text/event-stream" } });
      assert.equal(sse.status, 503);
      const refusal = (await sse.json()) as { code: string; message: string };
      assert.equal(refusal.code, "unavailable");
      assert.match(refusal.message, /^the initial sync of app KServices is not done yet \(last watch error: cannot reach the Kubernetes API at .*ECONNREFUSED.*\); see \/readyz, retry shortly$/);
    } finally {
      await s?.stop();
      await kc.cleanup();
    }
  });

  test("the help command matches how appwatch was started: npm start -- --help, npm run watch -- --help, bun run start --help", async () => {
    assert.equal(helpCommand({}), "appwatch --help");
    assert.equal(helpCommand({}, "watch"), "appwatch watch --help");
    assert.equal(helpCommand({ npm_lifecycle_event: "start", npm_config_user_agent: "npm/10.8.2 node/v20.20.2" }), "npm start -- --help");
    assert.equal(helpCommand({ npm_lifecycle_event: "start" }, "events"), "npm start -- events --help");
    assert.equal(helpCommand({ npm_lifecycle_event: "watch" }, "watch"), "npm run watch -- --help");
    assert.equal(helpCommand({ npm_lifecycle_event: "start", npm_config_user_agent: "bun/1.3.0 npm/? node/v24.3.0 linux x64" }), "bun run start --help");
    assert.equal(helpCommand({ npm_lifecycle_event: "test" }), "appwatch --help", "another script: the command itself");
    const r = await cli(["--bogus"], { npm_lifecycle_event: "start" });
    assert.equal(r.code, 2);
    assert.equal(r.err, "appwatch: Unknown option '--bogus'\nRun npm start -- --help for usage.");
    const w = await cli(["watch", "--bogus"], { npm_lifecycle_event: "watch" });
    assert.equal(w.code, 2);
    assert.match(w.err, /\nRun npm run watch -- --help for usage\.$/);
  });

  test("--version prints the version of package.json and the runtime, exit 0", async () => {
    const pkg = JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8")) as { version: string };
    assert.equal(VERSION, pkg.version);
    for (const argv of [["--version"], ["serve", "--version"], ["watch", "--version"]]) {
      const r = await cli(argv);
      assert.deepEqual([r.code, r.out, r.err], [0, versionLine(), ""], argv.join(" "));
    }
    assert.match(versionLine(), new RegExp(`^appwatch ${pkg.version.replace(/\./g, "\\.")} \\((node|deno|bun) \\S+\\)$`));
    assert.match(SERVE_HELP, /^ {2}--version +print the version and exit$/m);
  });
});
