/**
 * F14 (issue 24): app identities read from the cluster that are hard to address or to read. The
 * App stays Flyte's (the oracle says so), but every such app can be fetched, people see control,
 * bidirectional and zero-width characters as escapes (CLI here, the board in tests/board.test.ts),
 * and the odd identity is logged once per KService, escaped.
 */
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { describeEvent } from "../src/client/watch.ts";
import { oddIdentity, visible } from "../src/visible.ts";
import { eventually, http, ksvc, metric, startTestService, statusWithMessage, waitFor } from "./helpers/service.ts";

/** A managed KService whose app-id annotation is `appId`, verbatim. */
function withAppId(kname: string, appId: string) {
  const k = ksvc("odd", "dev", kname);
  k.metadata!.name = kname;
  k.metadata!.annotations!["flyte.org/app-id"] = appId;
  return k;
}

describe("odd app identities (F14)", () => {
  test("visible() escapes control, bidi and zero-width characters and nothing else; oddIdentity says why", () => {
    assert.equal(visible("gradio-chat.v1 ü€"), "gradio-chat.v1 ü€");
    assert.equal(visible("a\u202Eexe.txt"), "a\\u202Eexe.txt");
    assert.equal(visible("nul\u0000bel\u0007del\u007Fc1\u0085"), "nul\\u0000bel\\u0007del\\u007Fc1\\u0085");
    assert.equal(visible("z\u200Bw\u2066i\u2069\uFEFF\u061C"), "z\\u200Bw\\u2066i\\u2069\\uFEFF\\u061C");
    assert.equal(oddIdentity({ project: "p", domain: "d", name: "n" }), undefined);
    assert.equal(oddIdentity({ project: "", domain: "", name: "" }), "empty project, domain, name");
    assert.equal(oddIdentity({ project: "p", domain: "d", name: "a/b" }), "a '/' inside a part");
    assert.equal(oddIdentity({ project: "p", domain: "d", name: "x\u202E" }), "control, bidirectional or zero-width characters");
  });

  test("a '/', NUL or bidi override in a name: the app is served by /v1/apps/:p/:d/:n percent-encoded, logged once, escaped", async () => {
    const s = await startTestService();
    try {
      const cases = [
        ["slash", "odd/dev/a/b", "a/b"],
        ["bidi", "odd/dev/evil\u202Etxt.exe", "evil\u202Etxt.exe"],
        ["nul", "odd/dev/nul\u0000x", "nul\u0000x"],
      ] as const;
      for (const [k, appId] of cases) s.sb.create("services", withAppId(k, appId));
      s.sb.create("services", withAppId("empty", "//"));
      const odd = () => s.logs.filter((l) => l.includes("hard to address or display"));
      await waitFor(() => odd().length === 4, () => `four odd-identity warnings: ${s.logs.join("\n")}`);
      for (const [, , name] of cases) {
        const r = await http(`${s.url}/v1/apps/odd/dev/${encodeURIComponent(name)}`);
        assert.equal(r.status, 200, `${JSON.stringify(name)}: ${r.text}`);
        assert.equal(r.body.metadata.id.name, name, "the App keeps Flyte's exact name");
      }
      // Flyte keeps an app-id of "//" as empty parts: no path segment can be empty, so that app is
      // reached through the list (and Watch), where it is an App with only its org.
      const list = await http(`${s.url}/v1/apps?limit=100`);
      assert.equal(list.status, 200, list.text);
      assert.equal(list.body.apps.filter((a: { metadata: { id: object } }) => JSON.stringify(a.metadata.id) === '{"org":"flyte"}').length, 1);

      // Logged once per KService, with the parts escaped (no raw control or bidi character in the log).
      s.sb.updateStatus("services", "flyte", "bidi", statusWithMessage("again"));
      s.sb.updateStatus("services", "flyte", "slash", statusWithMessage("again"));
      await eventually(async () => JSON.stringify((await http(`${s.url}/v1/apps/odd/dev/a%2Fb`)).body).includes('"again"'), "the status update served");
      assert.equal(odd().length, 4, "not again on a status change");
      const bidi = odd().find((l) => l.includes('"ksvc":"flyte/bidi"'))!;
      assert.ok(bidi.includes("evil\\\\u202Etxt.exe"), bidi);
      for (const l of odd()) assert.ok(!/[\u0000-\u001F\u202A-\u202E]/.test(l), `raw control character in ${JSON.stringify(l)}`);
      assert.ok(odd().find((l) => l.includes('"ksvc":"flyte/empty"'))!.includes("empty project, domain, name"));
    } finally {
      await s.stop();
    }
  });

  test("the CLI shows control and bidi characters as escapes and empty parts as \"\"", () => {
    const ev = (id: object) => describeEvent({ createEvent: { app: { metadata: { id } } } } as never)!;
    assert.equal(ev({ org: "flyte", project: "p", domain: "d", name: "evil\u202Etxt.exe" }), "CREATE  flyte/p/d/evil\\u202Etxt.exe  UNSPECIFIED  0 replicas");
    assert.equal(ev({ org: "flyte", project: "", domain: "", name: "" }), 'CREATE  flyte/""/""/""  UNSPECIFIED  0 replicas');
    assert.equal(ev({ project: "p", domain: "d", name: "ok" }), "CREATE  p/d/ok  UNSPECIFIED  0 replicas");
  });
});

describe("labels that disagree with the app-id (F7)", () => {
  test("counted by a gauge and said once per KService; the gauge falls back when the labels agree again", async () => {
    const s = await startTestService();
    try {
      const planted = ksvc("victim", "prod", "app");
      planted.metadata!.name = "planted";
      planted.metadata!.labels!["flyte.org/project"] = "mal";
      s.sb.create("services", planted);
      const warned = () => s.logs.filter((l) => l.includes("label disagrees with its flyte.org/app-id"));
      await waitFor(() => warned().length === 1, () => `one mismatch warning: ${s.logs.join("\n")}`);
      assert.match(warned()[0]!, /"ksvc":"flyte\/planted"/);
      assert.match(warned()[0]!, /project label \\"mal\\" ≠ app-id \\"victim\\"/);
      const gauge = async () => metric((await http(`${s.url}/metrics`)).text, "appwatch_app_identity_mismatches");
      assert.equal(await gauge(), 1);
      // Served under its app-id's project (what the App says), visibly.
      const r = await http(`${s.url}/v1/apps/victim/prod/app`);
      assert.equal(r.status, 200, r.text);
      // A status change: no second warning.
      s.sb.updateStatus("services", "flyte", "planted", statusWithMessage("again"));
      await eventually(async () => JSON.stringify((await http(`${s.url}/v1/apps/victim/prod/app`)).body).includes('"again"'), "the status update served");
      assert.equal(warned().length, 1);
      // Labels that agree: the gauge falls to 0.
      s.sb.patch("services", "flyte", "planted", { metadata: { labels: { "flyte.org/project": "victim" } } });
      await eventually(async () => (await gauge()) === 0, "the gauge back at 0");
    } finally {
      await s.stop();
    }
  });
});
