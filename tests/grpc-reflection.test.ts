/**
 * gRPC server reflection on the gRPC listener (`--grpc-port`, src/service/connect/reflection.ts):
 * a real HTTP/2 bidirectional stream from connect-node's gRPC client on both reflection packages,
 * and — where the `buf` CLI is built (scripts/build-buf.sh; .ci/run builds it, and with CI=true
 * this test requires it) — `buf curl` listing and calling AppService with no `.proto` in hand.
 */
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { createFileRegistry, fromBinary } from "@bufbuild/protobuf";
import { FileDescriptorProtoSchema } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { REFLECTION_PACKAGES, reflectionService } from "../src/service/connect/reflection.ts";
import { startTestService } from "./helpers/service.ts";

type Request = { host?: string; messageRequest: { case: string; value: unknown } };
// deno-lint-ignore no-explicit-any
type Response = any;
interface Reflector {
  serverReflectionInfo(requests: AsyncIterable<Request>, options?: { headers?: Record<string, string> }): AsyncIterable<Response>;
}

/** Sends `requests` on one reflection stream and collects every answer. */
async function reflect(url: string, pkg: (typeof REFLECTION_PACKAGES)[number], requests: Request[], headers?: Record<string, string>): Promise<Response[]> {
  const client = createClient(reflectionService(pkg), createGrpcTransport({ baseUrl: url })) as unknown as Reflector;
  const out: Response[] = [];
  for await (const r of client.serverReflectionInfo((async function* () {
    yield* requests;
  })(), { headers })) out.push(r);
  return out;
}

const ask = (c: string, value: unknown, host = "appwatch.test"): Request => ({ host, messageRequest: { case: c, value } });
const fileNames = (r: Response): string[] =>
  r.messageResponse.value.fileDescriptorProto.map((b: Uint8Array) => fromBinary(FileDescriptorProtoSchema, b).name);

/** The buf CLI scripts/build-buf.sh builds (outside the repo, at the version it names), if present. */
function bufBinary(): string | undefined {
  const version = /^BUF_VERSION=(\S+)/m.exec(readFileSync(new URL("../scripts/build-buf.sh", import.meta.url), "utf8"))?.[1];
  const path = process.env.APPWATCH_BUF ?? `${process.env.HOME}/.cache/appwatch/buf/${version}/buf`;
  return existsSync(path) ? path : undefined;
}

function run(cmd: string, args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(cmd, args, { timeout: 60_000 }, (err, stdout, stderr) => {
      resolve({ code: err ? (typeof err.code === "number" ? err.code : 1) : 0, stdout, stderr });
    });
  });
}

describe("gRPC server reflection (--grpc-port)", () => {
  test("lists the services; a symbol's file comes with its imports, each import once per stream; unknown names are NOT_FOUND; v1 and v1alpha", async () => {
    const s = await startTestService({ grpcPort: 0 });
    try {
      for (const pkg of REFLECTION_PACKAGES) {
        const [list, byService, byMessage, byMethod, noFile, noSymbol, noExt, extNums, byFile] = await reflect(s.grpcUrl!, pkg, [
          ask("listServices", ""),
          ask("fileContainingSymbol", "flyteidl2.app.AppService"),
          ask("fileContainingSymbol", "flyteidl2.app.App"),
          ask("fileContainingSymbol", "flyteidl2.app.AppService.Watch"),
          ask("fileByFilename", "no/such.proto"),
          ask("fileContainingSymbol", "flyteidl2.app.Nope"),
          ask("fileContainingExtension", { containingType: "flyteidl2.app.App", extensionNumber: 100 }),
          ask("allExtensionNumbersOfType", "flyteidl2.app.App"),
          ask("fileByFilename", "google/protobuf/timestamp.proto"),
        ]);
        assert.equal(list.validHost, "appwatch.test");
        assert.equal(list.originalRequest.messageRequest.case, "listServices");
        assert.deepEqual(list.messageResponse.value.service.map((x: { name: string }) => x.name).sort(), [
          "flyteidl2.app.AppService",
          "grpc.reflection.v1.ServerReflection",
          "grpc.reflection.v1alpha.ServerReflection",
        ]);
        // The service's file first, then every file it imports, transitively: enough to build it.
        assert.equal(byService.messageResponse.case, "fileDescriptorResponse");
        const files = byService.messageResponse.value.fileDescriptorProto.map((b: Uint8Array) => fromBinary(FileDescriptorProtoSchema, b));
        assert.equal(files[0].name, "flyteidl2/app/appwatch_app_service.proto");
        assert.ok(files.some((f: { name: string }) => f.name === "google/protobuf/timestamp.proto"));
        // As a client does: the first file, its imports resolved by name from the rest (any order).
        const byName = new Map(files.map((f: { name: string }) => [f.name, f]));
        const rebuilt = createFileRegistry(files[0], (name) => byName.get(name) as never);
        const service = rebuilt.getService("flyteidl2.app.AppService");
        assert.deepEqual(service?.methods.map((m) => [m.name, m.methodKind]).filter(([n]) => ["Get", "List", "Watch"].includes(n!)), [
          ["Get", "unary"],
          ["List", "unary"],
          ["Watch", "server_streaming"],
        ]);
        assert.ok(rebuilt.getMessage("flyteidl2.app.App")?.fields.some((f) => f.name === "spec"));
        // Asked again on the same stream: the file itself, none of the imports already sent.
        assert.deepEqual(fileNames(byMessage), ["flyteidl2/app/appwatch_app_service.proto"]);
        assert.deepEqual(fileNames(byMethod), ["flyteidl2/app/appwatch_app_service.proto"]);
        for (const [r, what] of [[noFile, 'file "no/such.proto"'], [noSymbol, 'symbol "flyteidl2.app.Nope"'], [noExt, "extension 100"]] as const) {
          assert.equal(r.messageResponse.case, "errorResponse");
          assert.equal(r.messageResponse.value.errorCode, Code.NotFound);
          assert.ok(r.messageResponse.value.errorMessage.includes(what), r.messageResponse.value.errorMessage);
        }
        assert.deepEqual(fileNames(byFile), ["google/protobuf/timestamp.proto"]);
        assert.deepEqual([extNums.messageResponse.case, extNums.messageResponse.value.baseTypeName, extNums.messageResponse.value.extensionNumber], ["allExtensionNumbersResponse", "flyteidl2.app.App", []]);
      }
    } finally {
      await s.stop();
    }
  });

  test("a request with nothing set ends the stream with invalid_argument; with auth on, reflection needs the token too", async () => {
    const s = await startTestService({ grpcPort: 0, authTokens: ["s3cret-token"] });
    try {
      const url = s.grpcUrl!;
      await assert.rejects(reflect(url, "grpc.reflection.v1", [ask("listServices", "")]), (e: unknown) => ConnectError.from(e).code === Code.Unauthenticated);
      const auth = { authorization: "Bearer s3cret-token" };
      const [ok] = await reflect(url, "grpc.reflection.v1", [ask("listServices", "")], auth);
      assert.equal(ok.messageResponse.case, "listServicesResponse");
      await assert.rejects(
        reflect(url, "grpc.reflection.v1", [{ messageRequest: { case: undefined as never, value: undefined } }], auth),
        (e: unknown) => ConnectError.from(e).code === Code.InvalidArgument && /none of its fields is set/.test(ConnectError.from(e).rawMessage),
      );
    } finally {
      await s.stop();
    }
  });

  const buf = bufBinary();
  const needBuf = process.env.CI === "true" && process.env.APPWATCH_SKIP_BUF !== "1";
  test("buf curl lists AppService's methods and calls List, Get and Watch by reflection alone", { skip: !buf && !needBuf ? "the buf CLI is not built (scripts/build-buf.sh)" : false }, async () => {
    assert.ok(buf, "CI=true: the buf CLI must be built (scripts/build-buf.sh) for this test");
    const s = await startTestService({ grpcPort: 0 });
    try {
      const url = s.grpcUrl!;
      const h2 = ["curl", "--protocol", "grpc", "--http2-prior-knowledge"];
      const methods = await run(buf, [...h2, "--list-methods", url]);
      assert.equal(methods.code, 0, methods.stderr);
      for (const m of ["Get", "List", "Watch"]) assert.ok(methods.stdout.split("\n").includes(`flyteidl2.app.AppService/${m}`), methods.stdout);
      const list = await run(buf, [...h2, "-d", "{}", `${url}/flyteidl2.app.AppService/List`]);
      assert.equal(list.code, 0, list.stderr);
      const apps = JSON.parse(list.stdout).apps as { metadata: { id: { project: string; domain: string; name: string } } }[];
      assert.equal(apps.length, 6);
      const id = apps[0]!.metadata.id;
      const get = await run(buf, [...h2, "-d", JSON.stringify({ appId: id }), `${url}/flyteidl2.app.AppService/Get`]);
      assert.equal(get.code, 0, get.stderr);
      assert.deepEqual(JSON.parse(get.stdout).app.metadata.id, id);
      // Watch: the snapshot of one app as a create event; the stream stays open, so buf curl is cut after it.
      const watch = await run(buf, [...h2, "--connect-timeout", "5", "-d", JSON.stringify({ appId: id }), `${url}/flyteidl2.app.AppService/Watch`, "--timeout", "3s"]);
      const first = JSON.parse(watch.stdout.split("\n}\n")[0]! + "\n}");
      assert.deepEqual(first.createEvent.app.metadata.id, id, watch.stdout + watch.stderr);
      // The Go side resolves the message types from our descriptors: the JSON is the App we serve.
      assert.equal(typeof first.createEvent.app.status, "object");
    } finally {
      await s.stop();
    }
    // With auth on: refused without the token, served with it (sent to reflection too).
    const a = await startTestService({ grpcPort: 0, authTokens: ["s3cret-token"] });
    try {
      const h2 = ["curl", "--protocol", "grpc", "--http2-prior-knowledge"];
      const refused = await run(buf, [...h2, "--list-methods", a.grpcUrl!]);
      assert.notEqual(refused.code, 0);
      assert.match(refused.stderr, /unauthenticated|not authenticated/i); // buf words a gRPC unauthenticated as its own login hint
      const ok = await run(buf, [...h2, "-H", "Authorization: Bearer s3cret-token", "--reflect-header", "*", "-d", "{}", `${a.grpcUrl!}/flyteidl2.app.AppService/List`]);
      assert.equal(ok.code, 0, ok.stderr);
      assert.equal(JSON.parse(ok.stdout).apps.length, 6);
    } finally {
      await a.stop();
    }
  });
});
