/**
 * Flyte's own published TypeScript client (`@flyteorg/flyteidl2`, its generated AppService and
 * messages) as an oracle for appwatch's AppService: on every transport (Connect JSON and binary,
 * gRPC-Web; gRPC, gRPC-Web and Connect on `--grpc-port`), List, Get and Watch decode with Flyte's
 * schema — binary by Flyte's field numbers, JSON by Flyte's field names, unknown fields refused —
 * into exactly the App JSON that appwatch's REST API serves.
 */
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { type DescMessage, type DescService, toJson } from "@bufbuild/protobuf";
import { createClient } from "@connectrpc/connect";
import { transports } from "./helpers/connect-transports.ts";
import { http, type Json, ksvcName, startTestService, statusWithMessage, within } from "./helpers/service.ts";

// The package ships its generated TypeScript as is (TS enums, which this repo's strict,
// erasable-only type check refuses), so it is loaded at run time and not type-checked here.
// Deno does not strip types of files under node_modules (ERR_UNSUPPORTED_NODE_MODULES_TYPE_STRIPPING).
const onDeno = "Deno" in globalThis;
const FLYTE = "@flyteorg/flyteidl2/flyteidl2/app/";
const { AppSchema } = onDeno ? { AppSchema: undefined as never } : (await import(`${FLYTE}app_definition_pb.ts`)) as { AppSchema: DescMessage };
const { AppService } = onDeno ? { AppService: undefined as never } : (await import(`${FLYTE}app_service_pb.ts`)) as { AppService: DescService };

interface FlyteAppClient {
  list(req: Json): Promise<{ apps: Json[] }>;
  get(req: Json): Promise<{ app: Json }>;
  watch(req: Json, options: { signal: AbortSignal; onHeader: (h: Headers) => void }): AsyncIterable<{ event: { case: string; value: Json } }>;
}

const key = (a: Json) => JSON.stringify(a.metadata.id);
const byId = (apps: Json[]) => [...apps].sort((a, b) => (key(a) < key(b) ? -1 : 1));

describe("Flyte's generated client (@flyteorg/flyteidl2) against appwatch", () => {
  for (const [kind, transport] of Object.entries(transports)) {
    const skip = onDeno ? "Deno does not run TypeScript from node_modules, which is how the package ships" : false;
    test(`${kind}: List, Get and Watch decode with Flyte's schema into appwatch's App JSON`, { skip }, async () => {
      const s = await startTestService({ grpcPort: 0 });
      try {
        const client = createClient(AppService, transport(s)) as unknown as FlyteAppClient;
        const rest = (await http(`${s.url}/v1/apps?limit=100`)).body.apps as Json[];
        assert.equal(rest.length, 6);

        const list = await client.list({});
        assert.deepEqual(byId(list.apps.map((a) => toJson(AppSchema, a))), byId(rest));

        const id = list.apps[0]!.metadata.id;
        const got = await client.get({ identifier: { case: "appId", value: id } });
        assert.deepEqual(toJson(AppSchema, got.app), (await http(`${s.url}/v1/apps/${id.project}/${id.domain}/${id.name}`)).body);

        // Watch one app: its snapshot as a create event, with the resume position in the headers,
        // then a status change as an update event carrying the App the REST API now serves.
        const stop = new AbortController();
        let headers: Headers | undefined;
        const events = client.watch({ target: { case: "appId", value: id } }, { signal: stop.signal, onHeader: (h) => (headers = h) })[Symbol.asyncIterator]();
        try {
          const first = await within(events.next(), `${kind}: the snapshot event`);
          assert.equal(first.value?.event.case, "createEvent");
          assert.deepEqual(toJson(AppSchema, first.value!.event.value.app), toJson(AppSchema, got.app));
          assert.match(headers?.get("appwatch-resume") ?? "", /./, "the resume position in the response headers");
          s.sb.updateStatus("services", "flyte", ksvcName(id.project, id.domain, id.name), statusWithMessage(`changed for ${kind}`));
          const next = await within(events.next(), `${kind}: the update event`);
          assert.equal(next.value?.event.case, "updateEvent");
          const updated = toJson(AppSchema, next.value!.event.value.updatedApp) as Json;
          assert.ok(JSON.stringify(updated).includes(`changed for ${kind}`));
          assert.deepEqual(updated, (await http(`${s.url}/v1/apps/${id.project}/${id.domain}/${id.name}`)).body);
        } finally {
          stop.abort();
          await events.return?.().catch(() => {});
        }
      } finally {
        await s.stop();
      }
    });
  }
});
