/**
 * protobuf-go as the oracle of the Spec decoder. `tests/oracle/protogo` (Go, our code: it loads a
 * FileDescriptorSet made from appwatch's own declarations) runs `proto.Unmarshal` + `protojson.Marshal`
 * on each input. Its answers for every input tests/spec-decoder.test.ts uses are committed in
 * tests/fixtures/protogo/spec.ndjson.gz, so the test runs on every runtime without Go;
 * `npm run oracle:protogo` regenerates them, and the test re-checks them live where Go exists.
 */
import { execFileSync, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { gunzipSync, gzipSync } from "node:zlib";
import { create, toBinary } from "@bufbuild/protobuf";
import { FileDescriptorSetSchema } from "@bufbuild/protobuf/wkt";
import { appRegistry } from "../../src/flyte/proto/app_service_pb.ts";

export const ORACLE_DIR: string = fileURLToPath(new URL("../oracle/protogo/", import.meta.url));
export const ORACLE_FIXTURE: string = fileURLToPath(new URL("../fixtures/protogo/spec.ndjson.gz", import.meta.url));

/** Go's answer for one input. */
export interface GoAnswer {
  ok: boolean;
  json?: string;
  stage?: "unmarshal" | "marshal";
  error?: string;
}

export const hex = (b: Uint8Array): string => Array.from(b, (x) => x.toString(16).padStart(2, "0")).join("");

/** The committed answers, by input bytes (hex). */
export function loadAnswers(): Map<string, GoAnswer> {
  const out = new Map<string, GoAnswer>();
  if (!existsSync(ORACLE_FIXTURE)) return out;
  const text = new TextDecoder().decode(gunzipSync(readFileSync(ORACLE_FIXTURE)));
  for (const line of text.split("\n")) {
    if (line === "") continue;
    const { input, ...answer } = JSON.parse(line) as GoAnswer & { input: string };
    out.set(input, answer);
  }
  return out;
}

export function saveAnswers(answers: Map<string, GoAnswer>): void {
  mkdirSync(join(ORACLE_FIXTURE, ".."), { recursive: true });
  const lines = [...answers].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([input, a]) => JSON.stringify({ input, ...a }));
  writeFileSync(ORACLE_FIXTURE, gzipSync(lines.join("\n") + "\n", { level: 9 }));
}

/** Every file of our declarations as one FileDescriptorSet (what the Go oracle loads). */
export function descriptorSet(): Uint8Array {
  return toBinary(FileDescriptorSetSchema, create(FileDescriptorSetSchema, { file: [...appRegistry.files].map((f) => f.proto) }));
}

/** Why the live oracle cannot run here (no `go`), or `false`. */
export function oracleSkip(): string | false {
  const r = spawnSync("go", ["version"], { stdio: "ignore" });
  return r.status === 0 ? false : "no Go toolchain on PATH: the protobuf-go oracle was not run live (the committed answers were still checked)";
}

/** Builds the oracle (cached outside the repo) and runs it on `inputs`. */
export function runOracle(inputs: Uint8Array[], message = "flyteidl2.app.Spec"): GoAnswer[] {
  const dir = join(tmpdir(), "appwatch-protogo");
  mkdirSync(dir, { recursive: true });
  const bin = join(dir, "protogo");
  execFileSync("go", ["build", "-o", bin, "."], { cwd: ORACLE_DIR, stdio: ["ignore", "inherit", "inherit"], env: { ...process.env, GOFLAGS: "-buildvcs=false" } });
  const set = join(dir, "appwatch.binpb");
  writeFileSync(set, descriptorSet());
  const out = execFileSync(bin, [set, message], {
    input: inputs.map((b) => btoa(String.fromCharCode(...b))).join("\n") + "\n",
    maxBuffer: 1 << 30,
    stdio: ["pipe", "pipe", "inherit"],
  });
  const answers = new TextDecoder().decode(out).split("\n").filter((l) => l !== "").map((l) => JSON.parse(l) as GoAnswer);
  if (answers.length !== inputs.length) throw new Error(`protogo answered ${answers.length} of ${inputs.length} inputs`);
  return answers;
}
