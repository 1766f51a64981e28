/**
 * Safe defaults (issue 24): `appwatch serve` listens on loopback unless told otherwise, and warns
 * loudly when it listens beyond loopback without auth. (The image and deploy/ pass 0.0.0.0
 * themselves: scripts/publish-check.mjs checks that.)
 */
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { createLogger } from "../src/log.ts";
import { startSandboxCluster } from "../src/sandbox/mod.ts";
import { DEFAULT_SETTINGS, loadSettings, SERVE_HELP } from "../src/service/settings/mod.ts";
import { exposureWarning, isLoopback, runtimeLimitsWarning } from "../src/service/exposure.ts";
import { runtimeName } from "../src/runtime.ts";
import { type RunningService, startService } from "../src/service/server.ts";
import { testSettings } from "./helpers/service.ts";

describe("safe defaults: loopback unless told, a loud warning beyond it without auth", () => {
  test("serve listens on 127.0.0.1 by default; the help says so", () => {
    assert.equal(DEFAULT_SETTINGS.host, "127.0.0.1");
    assert.equal(loadSettings({ argv: [], env: {} }).settings.host, "127.0.0.1");
    assert.equal(loadSettings({ argv: [], env: { APPWATCH_HOST: "0.0.0.0" } }).settings.host, "0.0.0.0");
    assert.match(SERVE_HELP, /--host <addr>[^\n]*\n(?:[^\n]*\n)*?[^\n]*default: 127\.0\.0\.1 \(this machine only\)/);
  });

  test("loopback is 127.0.0.0/8, ::1 and localhost; everything else is beyond it", () => {
    for (const h of ["127.0.0.1", "127.1.2.3", "::1", "[::1]", "localhost", "LOCALHOST", "::ffff:127.0.0.1"]) assert.equal(isLoopback(h), true, h);
    for (const h of ["0.0.0.0", "::", "", "10.0.0.5", "192.168.1.2", "128.0.0.1", "example.com", "::ffff:10.0.0.1"]) assert.equal(isLoopback(h), false, h);
    assert.equal(exposureWarning("127.0.0.1", false), undefined);
    assert.equal(exposureWarning("0.0.0.0", true), undefined, "auth on: no warning");
    assert.match(exposureWarning("0.0.0.0", false) ?? "", /^NO AUTH ON EVERY NETWORK INTERFACE: .*--auth-tokens-file.*--host 127\.0\.0\.1/);
    assert.match(exposureWarning("10.0.0.5", false) ?? "", /^NO AUTH ON 10\.0\.0\.5: /);
  });

  test("startService warns when it listens beyond loopback without auth, and only then", async () => {
    const runs: [string, string[], boolean][] = [["0.0.0.0", [], true], ["127.0.0.1", [], false], ["0.0.0.0", ["a-token-of-some-length"], false]];
    for (const [host, authTokens, warned] of runs) {
      const { warnings, logs } = await startWarnings(host, authTokens, "NO AUTH ON");
      assert.equal(warnings.length, warned ? 1 : 0, `${host} auth=${authTokens.length > 0}: ${logs.join("\n")}`);
      if (warned) assert.deepEqual([warnings[0]!.level, warnings[0]!.host], ["warn", host]);
    }
  });

  test("Deno's limits (F12): said at start beyond loopback, auth or not; never on loopback or on Node and Bun", async () => {
    assert.equal(runtimeLimitsWarning("deno", "127.0.0.1"), undefined);
    assert.equal(runtimeLimitsWarning("deno", "::1"), undefined);
    for (const other of ["node", "bun"]) assert.equal(runtimeLimitsWarning(other, "0.0.0.0"), undefined, other);
    assert.match(runtimeLimitsWarning("deno", "0.0.0.0") ?? "", /^DENO LIMITS ON EVERY NETWORK INTERFACE: .*request-header timeout.*unmasked.*fragmented.*client_header_timeout.*docs\/operations\.md/);
    assert.match(runtimeLimitsWarning("deno", "10.0.0.5") ?? "", /^DENO LIMITS ON 10\.0\.0\.5: /);
    const onDeno = runtimeName() === "deno";
    const runs: [string, string[], boolean][] = [["0.0.0.0", [], onDeno], ["0.0.0.0", ["a-token-of-some-length"], onDeno], ["127.0.0.1", [], false]];
    for (const [host, authTokens, warned] of runs) {
      const { warnings, logs } = await startWarnings(host, authTokens, "DENO LIMITS ON");
      assert.equal(warnings.length, warned ? 1 : 0, `${runtimeName()} ${host} auth=${authTokens.length > 0}: ${logs.join("\n")}`);
      if (warned) assert.deepEqual([warnings[0]!.level, warnings[0]!.runtime], ["warn", "deno"]);
    }
  });
});

/** Starts the service on `host` (with `authTokens`) over a sandbox, stops it, and gives its start-up log and the warnings whose message starts with `prefix`. */
async function startWarnings(host: string, authTokens: string[], prefix: string) {
  const logs: string[] = [];
  let s: RunningService | undefined;
  try {
    s = await startService(testSettings({ host, authTokens }), { logger: createLogger({ level: "warn", sink: (l) => logs.push(l) }), cluster: await startSandboxCluster({ demoIntervalMs: 0 }) });
  } finally {
    await s?.stop();
  }
  const warnings = logs.map((l) => JSON.parse(l) as { level: string; msg: string; host?: string; runtime?: string }).filter((l) => l.msg.startsWith(prefix));
  return { warnings, logs };
}
