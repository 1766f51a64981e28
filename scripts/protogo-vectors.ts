// Regenerates tests/fixtures/protogo/spec.ndjson.gz: protobuf-go's answer for every input that
// tests/spec-decoder.test.ts uses. Needs Go (builds tests/oracle/protogo, cached in the temp dir).
//   npm run oracle:protogo
import { spawnSync } from "node:child_process";
import { readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type GoAnswer, hex, runOracle, saveAnswers } from "../tests/helpers/protogo.ts";

const collect = join(tmpdir(), `appwatch-protogo-inputs-${process.pid}.txt`);
rmSync(collect, { force: true });
const run = spawnSync(process.execPath, ["--import", "tsx", "--test", "tests/spec-decoder.test.ts"], {
  env: { ...process.env, PROTOGO_COLLECT: collect },
  stdio: ["ignore", "ignore", "inherit"],
});
if (run.error) throw run.error;
const inputs = [...new Set(readFileSync(collect, "utf8").split("\n").filter((l) => l !== "").map((l) => l.slice(1)))];
rmSync(collect, { force: true });
const bytes = inputs.map((h) => Uint8Array.from(h.match(/../g) ?? [], (x) => parseInt(x, 16)));
const answers = runOracle(bytes);
const out = new Map<string, GoAnswer>();
bytes.forEach((b, i) => out.set(hex(b), answers[i]!));
saveAnswers(out);
const failed = answers.filter((a) => !a.ok).length;
console.log(`protogo: ${inputs.length} inputs, ${inputs.length - failed} decoded, ${failed} rejected → tests/fixtures/protogo/spec.ndjson.gz`);
