/**
 * Builds `bench/wasm-scan/assembly/scan.ts` (AssemblyScript) to WebAssembly
 * with the `assemblyscript` compiler from node_modules (a devDependency), in
 * this process, into the OS temp directory (never committed): the bench and
 * the differential check call {@link buildScanWasm} at start-up, so the
 * `.wasm` they measure is always the one built from the source in the repo.
 * Runs on Node, Deno and Bun. `node --import tsx bench/wasm-scan/build.ts`
 * builds it and prints the path.
 * @module
 */
import { mkdirSync, readFileSync, rmSync } from "node:fs";
import os from "node:os";
import process from "node:process";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

export const SCAN_SOURCE = fileURLToPath(new URL("./assembly/scan.ts", import.meta.url));

/** asc's options: speed-optimized, SIMD on, no GC runtime (the module never allocates), no asserts. */
export const ASC_ARGS = ["-O3", "--runtime", "stub", "--noAssert", "--enable", "simd", "--initialMemory", "16"];

interface Asc {
  main(argv: string[], options?: { stdout?: unknown; stderr?: unknown }): Promise<{ error: Error | null; stderr: { toString(): string } }>;
  createMemoryStream(): { toString(): string };
}

/** Compiles the scanner; returns its bytes (and the temporary path it was written to, removed again). */
export async function buildScanWasm(): Promise<{ path: string; bytes: Uint8Array<ArrayBuffer>; ms: number }> {
  const t0 = performance.now();
  const dir = join(os.tmpdir(), `appwatch-wasm-scan-${process.pid}`);
  mkdirSync(dir, { recursive: true });
  const out = join(dir, "scan.wasm");
  const mod = (await import("assemblyscript/asc")) as unknown as { default: Asc };
  const asc = mod.default;
  const stdout = asc.createMemoryStream();
  const stderr = asc.createMemoryStream();
  const { error } = await asc.main([SCAN_SOURCE, ...ASC_ARGS, "-o", out], { stdout, stderr });
  if (error) throw new Error(`asc failed: ${error.message}\n${stderr.toString()}`);
  const bytes = new Uint8Array(readFileSync(out));
  rmSync(dir, { recursive: true, force: true });
  return { path: out, bytes, ms: performance.now() - t0 };
}

if (import.meta.url === `file://${process.argv[1]}` || process.argv[1]?.endsWith("bench/wasm-scan/build.ts")) {
  const { path, bytes, ms } = await buildScanWasm();
  console.log(`built ${path} (${bytes.length} bytes, ${ms.toFixed(0)} ms; removed again)`);
}
