#!/usr/bin/env node
// Bundles the Cloudflare entry (src/worker/cloudflare.ts) into one ES module for workerd:
//   node scripts/build-worker.mjs [--outfile dist/cloudflare/worker.js] [--no-minify]
// (dist/cloudflare/worker.js by default), and refuses a bundle that pulls in what cannot run there or must not be shipped: any `node:`
// built-in, @hono/node-server, ws, undici, connect-node, kubeconfig/credential/file reading, or
// the sandbox. Prints the size and the largest inputs. `buildWorker()` is what tests call.
import { build } from "esbuild";
import { mkdirSync, statSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..");
export const ENTRY = join(ROOT, "src/worker/cloudflare.ts");
export const DEFAULT_OUTFILE = join(ROOT, "dist/cloudflare/worker.js");

/** Inputs that must never be in the bundle, with why. */
const FORBIDDEN = [
  [/^node:/, "a node: built-in"],
  [/node_modules\/@hono\/node-server\//, "the Node HTTP server"],
  [/node_modules\/(ws|undici)\//, "a Node-only networking package"],
  [/node_modules\/@connectrpc\/connect-node\//, "the Node gRPC adapter"],
  [/^src\/kube\/(config|kubeconfig|credentials|exec|transport|connect)\.ts$/, "kubeconfig, credential or file reading, or the Node/Deno/Bun TLS transport"],
  [/^src\/service\/(config|server)\.ts$/, "the CLI's configuration and server"],
  [/^src\/service\/adapters\/(node|deno|bun|grpc)\.ts$/, "another runtime's adapter"],
  [/^src\/(sandbox\/|cli\.ts|main\.ts|serve\.ts)/, "the sandbox or the CLI"],
];

/** What in `metafile` is forbidden: `[input, why][]`. */
export function forbiddenInputs(metafile) {
  const found = [];
  const seen = new Set();
  const check = (path) => {
    if (seen.has(path)) return;
    seen.add(path);
    for (const [re, why] of FORBIDDEN) if (re.test(path)) found.push([path, why]);
  };
  for (const [path, input] of Object.entries(metafile.inputs)) {
    check(path);
    for (const imp of input.imports) if (imp.external) check(imp.path);
  }
  for (const out of Object.values(metafile.outputs)) for (const imp of out.imports) check(imp.path);
  return found;
}

/** Builds the bundle; throws if it contains anything {@link FORBIDDEN}. Returns its path, size and inputs. */
export async function buildWorker({ outfile = DEFAULT_OUTFILE, minify = true } = {}) {
  mkdirSync(dirname(outfile), { recursive: true });
  const result = await build({
    absWorkingDir: ROOT,
    entryPoints: [ENTRY],
    outfile,
    bundle: true,
    format: "esm",
    platform: "browser",
    conditions: ["workerd", "worker", "browser"],
    target: "es2022",
    minify,
    sourcemap: false,
    metafile: true,
    logLevel: "silent",
    legalComments: "none",
  });
  const bad = forbiddenInputs(result.metafile);
  if (bad.length) throw new Error(`the Worker bundle must not contain:\n${bad.map(([p, why]) => `  ${p} (${why})`).join("\n")}`);
  const inputs = Object.entries(result.metafile.outputs[relative(ROOT, outfile)]?.inputs ?? {})
    .map(([path, x]) => ({ path, bytes: x.bytesInOutput }))
    .sort((a, b) => b.bytes - a.bytes);
  return { outfile, bytes: statSync(outfile).size, inputs, metafile: result.metafile };
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const args = process.argv.slice(2);
  const at = args.indexOf("--outfile");
  const outfile = at >= 0 ? resolve(args[at + 1]) : DEFAULT_OUTFILE;
  try {
    const { bytes, inputs } = await buildWorker({ outfile, minify: !args.includes("--no-minify") });
    console.log(`${relative(process.cwd(), outfile)}: ${(bytes / 1024).toFixed(1)} KiB (${bytes} bytes), no node: built-ins`);
    const byPackage = new Map();
    for (const { path, bytes: b } of inputs) {
      const m = path.match(/node_modules\/((?:@[^/]+\/)?[^/]+)/);
      const key = m ? m[1] : path.split("/").slice(0, 2).join("/");
      byPackage.set(key, (byPackage.get(key) ?? 0) + b);
    }
    for (const [k, b] of [...byPackage].sort((a, b) => b[1] - a[1]).slice(0, 10)) console.log(`  ${(b / 1024).toFixed(1).padStart(7)} KiB  ${k}`);
  } catch (err) {
    console.error(err instanceof Error ? err.message : String(err));
    process.exit(1);
  }
}
