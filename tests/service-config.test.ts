/**
 * `appwatch serve` settings (src/service/settings/): defaults < config file <
 * environment < flags; every key settable from each layer; Flyte's
 * `internalApps` nesting; unknown keys; errors naming key and source; auth
 * tokens from files and never echoed; the help text covering every option.
 */
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  type AppwatchSettings,
  ConfigError,
  DEFAULT_SETTINGS,
  describeSettings,
  loadSettings,
  OPTIONS,
  SERVE_HELP,
} from "../src/service/settings/mod.ts";

/** An in-memory file system for `readFile`. */
function files(map: Record<string, string>) {
  const read: string[] = [];
  const readFile = (path: string) => {
    read.push(path);
    if (path in map) return map[path]!;
    throw Object.assign(new Error(`ENOENT: no such file or directory, open '${path}'`), { code: "ENOENT" });
  };
  return { readFile, read };
}

function problems(fn: () => unknown): string[] {
  try {
    fn();
  } catch (err) {
    if (err instanceof ConfigError) return err.problems;
    throw err;
  }
  assert.fail("expected a ConfigError");
}

/** Every setting with a non-default value, as file YAML, env and flags. */
const ALL: AppwatchSettings = {
  port: 9001,
  grpcPort: 9091,
  host: "127.0.0.1",
  namespaces: ["flyte", "team-a"],
  sandbox: true,
  sandboxPort: 8443,
  logLevel: "debug",
  kubeconfig: "/etc/kube/config",
  context: "prod",
  clusterName: "east",
  clusterOrg: "acme",
  baseDomain: "apps.example.com",
  scheme: "http",
  ingressAppsPort: 30081,
  watchBufferSize: 7,
  slowConsumer: "disconnect",
  authTokens: ["tok-1", "tok-2"],
  allowedOrigins: ["https://board.example.com", "http://localhost:5173"],
  maxConnectionsPerClient: 3,
  maxMessageBytes: 1024,
  streamBufferBytes: 65536,
  heartbeatSeconds: 2.5,
  pingSeconds: 7,
  resumeWindow: 50,
  shutdownTimeoutSeconds: 4,
  demoIntervalMs: 250,
};

const ALL_YAML = `# appwatch.yaml
port: 9001
grpcPort: 9091
host: 127.0.0.1
namespaces: [flyte, team-a]
sandbox: true
sandboxPort: 8443
logLevel: debug
kubeconfig: /etc/kube/config
context: prod
clusterName: east
clusterOrg: acme
baseDomain: apps.example.com
scheme: http
ingressAppsPort: 30081
watchBufferSize: 7
slowConsumer: disconnect
authTokens: [tok-1, tok-2]
allowedOrigins:
  - https://board.example.com
  - http://localhost:5173
maxConnectionsPerClient: 3
maxMessageBytes: 1024
streamBufferBytes: 65536
heartbeatSeconds: 2.5
pingSeconds: 7
resumeWindow: 50
shutdownTimeoutSeconds: 4
demoIntervalMs: 250
`;

const ALL_ENV: Record<string, string> = {
  APPWATCH_PORT: "9001",
  APPWATCH_GRPC_PORT: "9091",
  APPWATCH_HOST: "127.0.0.1",
  APPWATCH_NAMESPACE: "flyte, team-a",
  APPWATCH_SANDBOX: "true",
  APPWATCH_SANDBOX_PORT: "8443",
  APPWATCH_LOG_LEVEL: "debug",
  APPWATCH_KUBECONFIG: "/etc/kube/config",
  APPWATCH_CONTEXT: "prod",
  APPWATCH_CLUSTER_NAME: "east",
  APPWATCH_CLUSTER_ORG: "acme",
  APPWATCH_BASE_DOMAIN: "apps.example.com",
  APPWATCH_SCHEME: "http",
  APPWATCH_INGRESS_APPS_PORT: "30081",
  APPWATCH_WATCH_BUFFER_SIZE: "7",
  APPWATCH_SLOW_CONSUMER: "disconnect",
  APPWATCH_AUTH_TOKENS: "tok-1,tok-2",
  APPWATCH_ALLOWED_ORIGINS: "https://board.example.com,http://localhost:5173",
  APPWATCH_MAX_CONNECTIONS_PER_CLIENT: "3",
  APPWATCH_MAX_MESSAGE_BYTES: "1024",
  APPWATCH_STREAM_BUFFER_BYTES: "65536",
  APPWATCH_HEARTBEAT_SECONDS: "2.5",
  APPWATCH_PING_SECONDS: "7",
  APPWATCH_RESUME_WINDOW: "50",
  APPWATCH_SHUTDOWN_TIMEOUT: "4",
  APPWATCH_DEMO_INTERVAL_MS: "250",
};

const ALL_FLAGS = [
  "--port", "9001", "--grpc-port", "9091", "--host", "127.0.0.1", "-n", "flyte", "--namespace", "team-a", "--sandbox", "--sandbox-port", "8443",
  "--log-level", "debug", "--kubeconfig", "/etc/kube/config", "--context", "prod", "--cluster-name", "east", "--cluster-org", "acme", "--base-domain", "apps.example.com",
  "--scheme", "http", "--ingress-apps-port", "30081", "--watch-buffer-size", "7", "--slow-consumer", "disconnect",
  "--auth-tokens-file", "/secrets/tokens", "--allowed-origin", "https://board.example.com", "--allowed-origin", "http://localhost:5173",
  "--max-connections-per-client", "3", "--max-message-bytes", "1024", "--stream-buffer-bytes", "65536", "--heartbeat-seconds", "2.5", "--ping-seconds", "7", "--resume-window", "50",
  "--shutdown-timeout", "4", "--demo-interval-ms", "250",
];

describe("serve settings: layers", () => {
  test("defaults: documented values, nothing read", () => {
    const fs = files({});
    const r = loadSettings({ argv: [], env: {}, readFile: fs.readFile });
    assert.equal(r.command, "serve");
    assert.deepEqual(r.settings, {
      port: 8080, host: "127.0.0.1", namespaces: [], logLevel: "info", baseDomain: "", scheme: "", ingressAppsPort: 0,
      watchBufferSize: 100, slowConsumer: "coalesce", authTokens: [], allowedOrigins: [], maxConnectionsPerClient: 64,
      maxMessageBytes: 4096, streamBufferBytes: 1048576, heartbeatSeconds: 15, pingSeconds: 30, resumeWindow: 10000, shutdownTimeoutSeconds: 10, demoIntervalMs: 2000,
    });
    assert.deepEqual(r.settings, DEFAULT_SETTINGS);
    assert.ok(Object.values(r.sources).every((s) => s === "default"));
    assert.equal(r.configFile, undefined);
    assert.deepEqual(fs.read, []);
    assert.equal(loadSettings({ argv: ["serve"], env: {} }).command, "serve", "a leading `serve` is the command, not an argument");
  });

  test("every setting can be set from the file, from the environment, and from flags", () => {
    const fromFile = loadSettings({ argv: ["--config", "/c/appwatch.yaml"], env: {}, readFile: files({ "/c/appwatch.yaml": ALL_YAML }).readFile });
    assert.deepEqual(fromFile.settings, ALL);
    assert.ok(Object.values(fromFile.sources).every((s) => s === "file"), JSON.stringify(fromFile.sources));

    const fromEnv = loadSettings({ argv: [], env: ALL_ENV });
    assert.deepEqual(fromEnv.settings, ALL);
    assert.ok(Object.values(fromEnv.sources).every((s) => s === "env"), JSON.stringify(fromEnv.sources));

    const fromFlags = loadSettings({ argv: ALL_FLAGS, env: {}, readFile: files({ "/secrets/tokens": "tok-1\ntok-2\n" }).readFile });
    assert.deepEqual(fromFlags.settings, ALL);
    assert.ok(Object.values(fromFlags.sources).every((s) => s === "flag"), JSON.stringify(fromFlags.sources));

    // The table covers every setting (and startService's every key).
    const keys = new Set(OPTIONS.map((o) => o.key));
    for (const key of Object.keys(ALL)) assert.ok(keys.has(key as never), `no option for ${key}`);
  });

  test("precedence: defaults < file < environment < flags, key by key", () => {
    const { readFile } = files({
      "/etc/appwatch/appwatch.yaml": "port: 9000\nhost: 10.0.0.1\nlogLevel: debug\nnamespaces: [from-file]\nbaseDomain: file.example.com\n",
    });
    const r = loadSettings({
      argv: ["--port", "9002", "-n", "from-flag"],
      env: { APPWATCH_CONFIG: "/etc/appwatch/appwatch.yaml", APPWATCH_PORT: "9001", APPWATCH_NAMESPACE: "from-env", APPWATCH_LOG_LEVEL: "warn", APPWATCH_HOST: "" },
      readFile,
    });
    assert.equal(r.configFile, "/etc/appwatch/appwatch.yaml");
    assert.equal(r.settings.port, 9002);
    assert.deepEqual(r.settings.namespaces, ["from-flag"]);
    assert.equal(r.settings.logLevel, "warn");
    assert.equal(r.settings.host, "10.0.0.1", "an empty variable counts as unset");
    assert.equal(r.settings.baseDomain, "file.example.com");
    assert.equal(r.settings.scheme, "");
    assert.deepEqual(
      [r.sources.port, r.sources.namespaces, r.sources.logLevel, r.sources.host, r.sources.baseDomain, r.sources.scheme],
      ["flag", "flag", "env", "file", "file", "default"],
    );
    // --config beats APPWATCH_CONFIG.
    const other = files({ "/a.yaml": "port: 1", "/b.yaml": "port: 2" });
    assert.equal(loadSettings({ argv: ["--config", "/b.yaml"], env: { APPWATCH_CONFIG: "/a.yaml" }, readFile: other.readFile }).settings.port, 2);
    assert.deepEqual(other.read, ["/b.yaml"]);
  });

  test("namespaces: repeat and comma-split; '*' and --all-namespaces mean all", () => {
    assert.deepEqual(loadSettings({ argv: ["-n", "a,b", "--namespace", "c"], env: {} }).settings.namespaces, ["a", "b", "c"]);
    assert.deepEqual(loadSettings({ argv: ["-n", "*"], env: {} }).settings.namespaces, ["*"]);
    assert.deepEqual(loadSettings({ argv: ["--all-namespaces"], env: { APPWATCH_NAMESPACE: "x" } }).settings.namespaces, ["*"]);
    assert.deepEqual(loadSettings({ argv: ["-A"], env: {} }).settings.namespaces, ["*"]);
    assert.deepEqual(loadSettings({ argv: [], env: {}, readFile: () => "namespaces: a, b" }).settings.namespaces, [], "no file without --config");
    assert.deepEqual(loadSettings({ argv: ["--config", "f"], env: {}, readFile: () => "namespaces: a, b" }).settings.namespaces, ["a", "b"], "a YAML string is a comma list");
    assert.deepEqual(problems(() => loadSettings({ argv: ["-n", "*,a"], env: {} })), [`--namespace: '*' (all namespaces) cannot be combined with other namespaces; got ["*","a"]`]);
    assert.deepEqual(problems(() => loadSettings({ argv: ["-n", "a", "-A"], env: {} })), ["--all-namespaces: cannot be combined with --namespace"]);
  });

  test("Flyte's internalApps nesting", () => {
    const yaml = "internalApps:\n  baseDomain: apps.example.com\n  scheme: https\n  ingressAppsPort: 443\n  watchBufferSize: 250\nport: 9000\n";
    const r = loadSettings({ argv: ["--config", "/c.yaml"], env: {}, readFile: files({ "/c.yaml": yaml }).readFile });
    assert.deepEqual(
      [r.settings.baseDomain, r.settings.scheme, r.settings.ingressAppsPort, r.settings.watchBufferSize, r.settings.port],
      ["apps.example.com", "https", 443, 250, 9000],
    );
    assert.equal(r.sources.baseDomain, "file");
    // The environment and flags still win over the nested keys.
    const over = loadSettings({ argv: ["--config", "/c.yaml", "--scheme", "http"], env: { APPWATCH_BASE_DOMAIN: "env.example.com" }, readFile: files({ "/c.yaml": yaml }).readFile });
    assert.deepEqual([over.settings.baseDomain, over.settings.scheme, over.settings.ingressAppsPort], ["env.example.com", "http", 443]);

    const bad = "baseDomain: a.example.com\ninternalApps:\n  baseDomain: b.example.com\n  ingressAppsPort: -1\n  enabled: true\n";
    assert.deepEqual(problems(() => loadSettings({ argv: ["--config", "/c.yaml"], env: {}, readFile: files({ "/c.yaml": bad }).readFile })), [
      "/c.yaml: internalApps.baseDomain: also set at the top level as baseDomain; set it once",
      "/c.yaml: internalApps.enabled: is not a known key; appwatch reads baseDomain, scheme, ingressAppsPort and watchBufferSize there",
      "/c.yaml: internalApps.ingressAppsPort: must be a port number (0-65535; 0: none in public URLs); got -1",
    ]);
    assert.deepEqual(
      problems(() => loadSettings({ argv: ["--config", "/c.yaml"], env: {}, readFile: files({ "/c.yaml": "internalApps: [1]" }).readFile })),
      ["/c.yaml: internalApps: must be a mapping (baseDomain, scheme, ingressAppsPort, watchBufferSize)"],
    );
  });
});

describe("serve settings: errors name the key and where it came from", () => {
  test("file, environment and flag errors, all reported at once, in layer order", () => {
    const { readFile } = files({ "appwatch.yaml": "port: eighty\nslowConsumer: block\nheartbeatSeconds: 0\n" });
    assert.deepEqual(
      problems(() =>
        loadSettings({
          argv: ["--config", "appwatch.yaml", "--port", "99999", "--max-message-bytes", "12", "--allowed-origin", "https://x.example.com/"],
          env: { APPWATCH_PORT: "http", APPWATCH_SANDBOX: "maybe", APPWATCH_NAMESPACE: "Flyte_NS", APPWATCH_SCHEME: "ftp" },
          readFile,
        })
      ),
      [
        'appwatch.yaml: port: must be a port number (0-65535; 0: any free port); got "eighty"',
        'appwatch.yaml: slowConsumer: must be coalesce, drop or disconnect; got "block"',
        "appwatch.yaml: heartbeatSeconds: must be a number of seconds (0.05-3600); got 0",
        'APPWATCH_PORT: must be a port number (0-65535; 0: any free port); got "http"',
        `APPWATCH_NAMESPACE: "Flyte_NS": a namespace is a DNS label (at most 63 lowercase letters, digits, '-') or '*' for all`,
        'APPWATCH_SCHEME: must be http, https or "" (https); got "ftp"',
        'APPWATCH_SANDBOX: must be true or false; got "maybe"',
        "--port: must be a port number (0-65535; 0: any free port); got 99999",
        "--max-message-bytes: must be an integer from 64 to 16777216; got 12",
        '--allowed-origin: "https://x.example.com/": an origin is scheme://host[:port] with no path or trailing slash, e.g. https://board.example.com',
      ],
    );
  });

  test("unknown keys in the file are errors (each one, with a hint); so is a file that is not a mapping or not YAML", () => {
    const read = (text: string) => problems(() => loadSettings({ argv: ["--config", "appwatch.yaml"], env: {}, readFile: () => text }));
    assert.deepEqual(read("port: 1\nbase_domain: x\nnamespace: flyte\nbogus: 1\n"), [
      "appwatch.yaml: base_domain: is not a known key (did you mean baseDomain?)",
      "appwatch.yaml: namespace: is not a known key (did you mean namespaces?)",
      "appwatch.yaml: bogus: is not a known key",
    ]);
    assert.deepEqual(read("- port: 1\n"), ["appwatch.yaml: must be a mapping of settings (key: value), not a list"]);
    assert.deepEqual(read("8080\n"), ["appwatch.yaml: must be a mapping of settings (key: value), not number"]);
    assert.equal(read("port: 1\nport: 2\n")[0]!, "appwatch.yaml: not valid YAML at line 2, column 1: Map keys must be unique");
    assert.deepEqual(loadSettings({ argv: ["--config", "empty.yaml"], env: {}, readFile: () => "# nothing yet\n" }).settings, DEFAULT_SETTINGS);
  });

  test("a config file that cannot be read names the flag or variable that pointed to it", () => {
    const { readFile } = files({});
    assert.deepEqual(problems(() => loadSettings({ argv: ["--config", "/nope.yaml"], env: {}, readFile })), ["--config: cannot read the config file /nope.yaml: no such file"]);
    assert.deepEqual(problems(() => loadSettings({ argv: [], env: { APPWATCH_CONFIG: "/nope.yaml" }, readFile })), ["APPWATCH_CONFIG: cannot read the config file /nope.yaml: no such file"]);
  });

  test("unknown flags and stray arguments are usage errors", () => {
    assert.match(problems(() => loadSettings({ argv: ["--bogus"], env: {} }))[0]!, /Unknown option '--bogus'/);
    assert.match(problems(() => loadSettings({ argv: ["extra"], env: {} }))[0]!, /positional argument/i);
    assert.match(problems(() => loadSettings({ argv: ["--auth-tokens", "x"], env: {} }))[0]!, /never taken from the command line/);
  });
});

describe("serve settings: auth tokens", () => {
  test("from a file (env, flag, or the config file relative to itself): one per line, comments and blanks ignored", async () => {
    const dir = await mkdtemp(join(tmpdir(), "appwatch-cfg-"));
    try {
      await writeFile(join(dir, "tokens"), "# rotated 2026-04\nfirst-token\n\n  second-token  \n");
      await writeFile(join(dir, "appwatch.yaml"), "authTokensFile: tokens\nport: 9000\n");
      // The real file system (the default readFile); a relative path in the file is relative to the file.
      const fromConfig = loadSettings({ argv: ["--config", join(dir, "appwatch.yaml")], env: {} });
      assert.deepEqual(fromConfig.settings.authTokens, ["first-token", "second-token"]);
      const fromEnv = loadSettings({ argv: [], env: { APPWATCH_AUTH_TOKENS_FILE: join(dir, "tokens") } });
      assert.deepEqual(fromEnv.settings.authTokens, ["first-token", "second-token"]);
      assert.equal(fromEnv.sources.authTokens, "env");
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  test("the highest layer that names tokens (list or file) replaces the lower ones; within a layer they add up", () => {
    const { readFile } = files({ "/c.yaml": "authTokens: [file-a]\nauthTokensFile: /t1\n", "/t1": "file-b\n", "/t2": "flag-c\n" });
    assert.deepEqual(loadSettings({ argv: ["--config", "/c.yaml"], env: {}, readFile }).settings.authTokens, ["file-a", "file-b"]);
    assert.deepEqual(loadSettings({ argv: ["--config", "/c.yaml"], env: { APPWATCH_AUTH_TOKENS: "env-a" }, readFile }).settings.authTokens, ["env-a"]);
    assert.deepEqual(loadSettings({ argv: ["--config", "/c.yaml", "--auth-tokens-file", "/t2"], env: { APPWATCH_AUTH_TOKENS: "env-a" }, readFile }).settings.authTokens, ["flag-c"]);
  });

  test("token errors never echo a token; an empty token file is an error, not silently no auth", () => {
    const { readFile } = files({ "/empty": "# no tokens\n\n", "/bad": "good-token\nbad token with spaces\n" });
    const all = [
      ...problems(() => loadSettings({ argv: [], env: { APPWATCH_AUTH_TOKENS: "fine-token,bad token" } })),
      ...problems(() => loadSettings({ argv: ["--auth-tokens-file", "/bad"], env: {}, readFile })),
      ...problems(() => loadSettings({ argv: ["--config", "/c.yaml"], env: {}, readFile: () => "authTokens: [ok-token, 42]\n" })),
    ];
    assert.deepEqual(all, [
      "APPWATCH_AUTH_TOKENS: item 2: a token must be printable ASCII without spaces",
      "--auth-tokens-file: /bad: token 2: a token must be printable ASCII without spaces",
      "/c.yaml: authTokens: item 2: a token must be a string",
    ]);
    assert.ok(!all.join("\n").match(/bad token|good-token|fine-token|ok-token/));
    assert.deepEqual(problems(() => loadSettings({ argv: ["--auth-tokens-file", "/empty"], env: {}, readFile })), [
      "--auth-tokens-file: the auth tokens file /empty has no tokens (one per line); refusing to run without auth",
    ]);
    assert.deepEqual(problems(() => loadSettings({ argv: [], env: { APPWATCH_AUTH_TOKENS_FILE: "/missing" }, readFile })), [
      "APPWATCH_AUTH_TOKENS_FILE: cannot read the auth tokens file /missing: no such file",
    ]);
  });

  test("describeSettings (what serve logs) has the token count, never the tokens", () => {
    const r = loadSettings({ argv: ["--port", "1"], env: { APPWATCH_AUTH_TOKENS: "super-secret-1,super-secret-2" } });
    const text = JSON.stringify(describeSettings(r));
    assert.ok(!text.includes("super-secret"));
    assert.match(text, /"auth":"2 bearer token\(s\)"/);
    assert.match(text, /"from":"port=flag authTokens=env"/);
  });
});

describe("serve --help", () => {
  test("lists every flag with its default, environment variable and file key", () => {
    const r = loadSettings({ argv: ["--help"], env: { APPWATCH_PORT: "not validated with --help" } });
    assert.equal(r.command, "help");
    for (const o of OPTIONS) {
      if (o.flag) assert.ok(SERVE_HELP.includes(`--${o.flag}${o.arg ? ` ${o.arg}` : ""}`), `--${o.flag} missing`);
      assert.ok(SERVE_HELP.includes(o.env), `${o.env} missing`);
      assert.ok(SERVE_HELP.includes(`default: ${o.shown}`), `default of ${o.key} missing`);
      assert.ok(SERVE_HELP.includes(`file: ${o.key}`), `file key ${o.key} missing`);
    }
    for (const flag of ["--config <path>", "-h, --help", "-A, --all-namespaces", "-n, --namespace <ns>", "APPWATCH_CONFIG", "internalApps"]) {
      assert.ok(SERVE_HELP.includes(flag), `${flag} missing`);
    }
    // Every flag in the help is accepted by the parser.
    for (const [, flag] of SERVE_HELP.matchAll(/(?:^|\s)(--[a-z-]+)/g)) {
      if (flag === "--help" || flag === "--config") continue;
      if (flag === "--version") continue; // runCli answers it before any settings are read (tests/cli-edges.test.ts)
      const o = OPTIONS.find((x) => `--${x.flag}` === flag);
      if (!o && flag === "--all-namespaces") continue;
      // A boolean without a default lists its false spelling (--no-sandbox); the parser takes it.
      const negated = OPTIONS.find((x) => x.kind === "bool" && `--no-${x.flag}` === flag);
      if (!o && negated) {
        assert.equal((loadSettings({ argv: [flag!], env: {} }).settings as Record<string, unknown>)[negated.key], false, flag);
        continue;
      }
      assert.ok(o, `${flag} is in the help but not an option`);
    }
    const long = SERVE_HELP.split("\n").filter((l) => l.length > 100);
    assert.deepEqual(long, [], "lines fit in 100 columns");
  });
});

describe("settingsFromEnv (the environment alone, for the Cloudflare Worker)", () => {
  test("reads the same variables with the same checks and messages as loadSettings", async () => {
    const { settingsFromEnv } = await import("../src/service/settings/env.ts");
    const env = { APPWATCH_NAMESPACE: "a, b", APPWATCH_HEARTBEAT_SECONDS: "5", APPWATCH_SLOW_CONSUMER: "drop" };
    const read = settingsFromEnv("serve", env);
    assert.ok(read.ok);
    const loaded = loadSettings({ argv: [], env });
    assert.deepEqual(read.settings.namespaces, ["a", "b"]);
    assert.equal(read.settings.heartbeatSeconds, loaded.settings.heartbeatSeconds);
    assert.equal(read.settings.slowConsumer, "drop");

    const bad = { APPWATCH_PORT: "x" };
    const refused = settingsFromEnv("serve", bad);
    assert.ok(!refused.ok);
    assert.throws(() => loadSettings({ argv: [], env: bad }), (err: Error) => err.message.includes(refused.problems[0]!));
  });

  test("a setting read from a file is refused, not silently dropped (there is no file system)", async () => {
    const { settingsFromEnv } = await import("../src/service/settings/env.ts");
    const r = settingsFromEnv("serve", { APPWATCH_AUTH_TOKENS_FILE: "/run/secrets/tokens" });
    assert.ok(!r.ok);
    assert.match(r.problems[0]!, /^APPWATCH_AUTH_TOKENS_FILE: files cannot be read here/);
  });
});
