/**
 * The one settings table (src/service/settings/table.ts): every subcommand's flags,
 * environment variables, file keys, defaults and `--help` come from it, so
 * `serve`, `watch` and `events` read a shared setting the same way
 * (defaults < file < environment < flags) and name the key and the source the
 * same way in errors.
 */
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { EVENTS_HELP, parseCli, SERVE_HELP, UsageError, WATCH_HELP } from "../src/cli.ts";
import { parseWatchArgs } from "../src/client/options.ts";
import { type Command, DEFAULT_SETTINGS, loadCommand, type SettingDef, SETTINGS } from "../src/service/settings/mod.ts";

const HELP: Record<Command, string> = { serve: SERVE_HELP, watch: WATCH_HELP, events: EVENTS_HELP };
const COMMANDS = ["serve", "watch", "events"] as const;

function usage(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    if (err instanceof UsageError) return err.message;
    throw err;
  }
  assert.fail("expected a UsageError");
}

describe("the settings table", () => {
  test("each setting is declared once: keys, flags, env names and file keys are unique where they meet", () => {
    for (const c of COMMANDS) {
      const mine = SETTINGS.filter((s) => (s.commands as readonly string[]).includes(c));
      assert.ok(mine.length > 0, c);
      const flags = mine.flatMap((s) => ("flag" in s ? [s.flag] : []));
      assert.equal(new Set(flags).size, flags.length, `${c}: a flag declared twice`);
      const keys = mine.map((s) => s.key);
      assert.equal(new Set(keys).size, keys.length, `${c}: a key declared twice`);
    }
    const envs = SETTINGS.flatMap((s) => ("env" in s ? [s.env] : []));
    assert.equal(new Set(envs).size, envs.length, "an environment variable declared twice");
    for (const s of SETTINGS) if ("env" in s) assert.match(s.env, /^APPWATCH_[A-Z_]+$/, s.key);
  });

  test("every command's --help lists exactly its own settings, with default, env and file key", () => {
    for (const c of COMMANDS) {
      for (const s of SETTINGS) {
        const used = (s.commands as readonly string[]).includes(c);
        if ("flag" in s) {
          const flag = new RegExp(`(^|[\\s,])--${s.flag}(?![\\w-])`, "m");
          if (used) assert.match(HELP[c], flag, `${c} --help lacks --${s.flag}`);
          else if (!SETTINGS.some((o) => o !== s && "flag" in o && o.flag === s.flag && (o.commands as readonly string[]).includes(c))) {
            assert.doesNotMatch(HELP[c], new RegExp(`^ +(-\\w, )?--${s.flag}(?![\\w-])`, "m"), `${c} --help lists --${s.flag}, which it does not read`);
          }
        }
        if (used && "env" in s) assert.ok(HELP[c].includes(s.env), `${c} --help lacks ${s.env}`);
        if (used && "file" in s) assert.ok(HELP[c].includes(`file: ${s.key}`), `${c} --help lacks file: ${s.key}`);
      }
      assert.deepEqual(HELP[c].split("\n").filter((l) => l.length > 100), [], `${c} --help fits in 100 columns`);
    }
  });

  test("every two-way boolean reads alike everywhere: --x, --x=<bool>, --no-x, the environment's and the file's words", () => {
    const rows = (SETTINGS as readonly SettingDef[]).filter((s) => s.type === "bool" && s.flag !== undefined && !s.negate);
    assert.ok(rows.some((r) => r.key === "sandbox") && rows.some((r) => r.key === "verbose"));
    for (const r of rows) {
      for (const c of r.commands) {
        const read = (argv: string[], env: Record<string, string> = {}, file?: string) =>
          (loadCommand(c, { argv: file === undefined ? argv : ["--config", "/c.yaml", ...argv], env, readFile: () => file ?? "" }).settings as Record<string, unknown>)[r.key];
        const label = `${c} ${r.key}`;
        assert.equal(read([`--${r.flag}`]), true, label);
        for (const word of ["true", "1", "yes", "on", "TRUE"]) assert.equal(read([`--${r.flag}=${word}`]), true, `${label} =${word}`);
        for (const word of ["false", "0", "no", "off", "False"]) assert.equal(read([`--${r.flag}=${word}`]), false, `${label} =${word}`);
        assert.equal(read([`--no-${r.flag}`]), false, label);
        if (r.env !== undefined) {
          assert.equal(read([], { [r.env]: "off" }), false, label);
          assert.equal(read([`--${r.flag}`], { [r.env]: "false" }), true, `${label}: the flag over the environment`);
        }
        if (r.file) {
          assert.equal(read([], {}, `${r.key}: false\n`), false, label);
          assert.equal(read([`--no-${r.flag}`], {}, `${r.key}: true\n`), false, `${label}: the flag over the file`);
        }
        assert.throws(() => read([`--${r.flag}=maybe`]), new RegExp(`--${r.flag}: must be true or false; got "maybe"`), label);
      }
    }
  });

  test("the Cloudflare Worker's own variables are rows of the table too, read by no subcommand", async () => {
    const { workerSettingsFromEnv } = await import("../src/service/settings/env.ts");
    const rows = (SETTINGS as readonly SettingDef[]).filter((s) => s.worker);
    assert.deepEqual(rows.map((r) => r.env), ["APPWATCH_KUBE_API_URL", "APPWATCH_KUBE_TOKEN"]);
    for (const r of rows) {
      assert.deepEqual(r.commands, [], r.key);
      for (const c of COMMANDS) assert.ok(!HELP[c].includes(r.env!), `${c} --help lists ${r.env}`);
    }
    assert.deepEqual(workerSettingsFromEnv({ APPWATCH_KUBE_API_URL: "https://k8s.example.com:6443", APPWATCH_KUBE_TOKEN: " t " }), { ok: true, settings: { apiServer: "https://k8s.example.com:6443", apiToken: "t" } });
    assert.deepEqual(workerSettingsFromEnv({}), { ok: false, message: "APPWATCH_KUBE_API_URL is required" });
  });

  test("DEFAULT_SETTINGS are the table's serve defaults", () => {
    assert.deepEqual(loadCommand("serve", { argv: [], env: {} }).settings, DEFAULT_SETTINGS);
    assert.equal(DEFAULT_SETTINGS.heartbeatSeconds, 15);
  });
});

describe("events reads the settings it shares with serve the way serve does", () => {
  test("from the environment, below flags", () => {
    const env = { APPWATCH_NAMESPACE: "a, b", APPWATCH_LOG_LEVEL: "debug", APPWATCH_SANDBOX: "true", APPWATCH_DEMO_INTERVAL_MS: "0" };
    const o = parseCli([], env);
    assert.deepEqual([o.namespaces, o.logLevel, o.sandbox, o.demoIntervalMs], [["a", "b"], "debug", true, 0]);
    assert.deepEqual(parseCli(["-n", "c"], env).namespaces, ["c"]);
    assert.deepEqual(parseCli(["-A"], {}).namespaces, ["*"], "-A, --all-namespaces too");
    // Settings only serve reads are not events' business, even when invalid.
    assert.equal(parseCli([], { APPWATCH_PORT: "http", APPWATCH_SLOW_CONSUMER: "block" }).logLevel, "info");
  });

  test("from the config file (--config or APPWATCH_CONFIG); serve's keys there are known, typos are not", () => {
    const readFile = (p: string) => {
      if (p === "/c.yaml") return "kubeconfig: /etc/kube/config\nnamespaces: [team]\nport: 9000\nheartbeatSeconds: 2\n";
      if (p === "/typo.yaml") return "namespace: team\n";
      throw Object.assign(new Error("ENOENT"), { code: "ENOENT" });
    };
    const o = parseCli(["--config", "/c.yaml"], {}, readFile);
    assert.deepEqual([o.kubeconfig, o.namespaces], ["/etc/kube/config", ["team"]]);
    assert.equal(parseCli([], { APPWATCH_CONFIG: "/c.yaml", APPWATCH_NAMESPACE: "env" }, readFile).namespaces.join(), "env");
    assert.match(usage(() => parseCli(["--config", "/typo.yaml"], {}, readFile)), /\/typo\.yaml: namespace: is not a known key \(did you mean namespaces\?\)/);
  });

  test("errors name the key and the source, as serve's do", () => {
    assert.match(usage(() => parseCli([], { APPWATCH_LOG_LEVEL: "loud" })), /APPWATCH_LOG_LEVEL: must be debug, info, warn or error; got "loud"/);
    assert.match(usage(() => parseCli(["--sandbox-port", "99999"], {})), /--sandbox-port: must be a port number \(0-65535; 0: any free port\); got 99999/);
  });
});

describe("watch parses through the same table", () => {
  test("its environment variables are the table's; serve's variables and the config file are not read", () => {
    const r = parseWatchArgs([], { APPWATCH_URL: "http://example.test:1", APPWATCH_CONFIG: "/nope.yaml", APPWATCH_PORT: "http" });
    assert.ok(!r.help);
    if (!r.help) assert.equal(r.options.url, "http://example.test:1");
    assert.throws(() => parseWatchArgs(["--config", "x"], {}), /Unknown option '--config'/);
  });
});
