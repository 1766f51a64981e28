/**
 * Loads the scanner built by `build.ts` and gives JavaScript its one hot
 * call: {@link ScanWasm.load} copies a line (or chunk) into the module's
 * memory, {@link ScanWasm.skip} skips the container at an offset of it.
 * @module
 */
import { buildScanWasm } from "./build.ts";

interface ScanExports {
  memory: WebAssembly.Memory;
  skip(start: number, end: number): number;
  prune(root: number, leaves: number, found: number, nFound: number, start: number, n: number, out: number, ranges: number): number;
  dataStart(): number;
  simdBlockCount(): number;
  scalarRunCount(): number;
  resetCounts(): void;
}

/** Bytes at the start of the data area for compiled paths (`alloc`); the line is copied after them. */
const PLAN_BYTES = 32 * 1024;

/** `prune`'s answer when a shallow key holds an escape it does not decode: run the JavaScript walk. */
export const WASM_FALLBACK = -3;

export class ScanWasm {
  readonly #x: ScanExports;
  readonly #base: number;
  readonly #planStart: number;
  #planAt: number;
  #u8: Uint8Array<ArrayBuffer>;
  /** Where `prune` wrote the kept bytes of the last line. */
  out = 0;
  /** Length of the bytes last loaded (skip never reads past them). */
  #end = 0;

  constructor(module: WebAssembly.Module) {
    const instance = new WebAssembly.Instance(module, { env: { abort: () => { throw new Error("wasm abort"); } } });
    this.#x = instance.exports as unknown as ScanExports;
    this.#planStart = this.#planAt = this.#x.dataStart();
    this.#base = this.#planStart + PLAN_BYTES;
    this.#u8 = new Uint8Array(this.#x.memory.buffer);
  }

  /** Reserves `bytes` (4-aligned) in the paths area; returns the address. */
  alloc(bytes: number): number {
    const p = this.#planAt;
    this.#planAt += (bytes + 3) & ~3;
    if (this.#planAt > this.#planStart + PLAN_BYTES) throw new Error("ScanWasm: paths area full");
    return p;
  }

  /** The module's memory as bytes (a new view after the memory grew). */
  bytes(): Uint8Array<ArrayBuffer> {
    if (this.#u8.buffer !== this.#x.memory.buffer) this.#u8 = new Uint8Array(this.#x.memory.buffer);
    return this.#u8;
  }

  /**
   * The whole prune walk in WASM over the paths compiled at `root` (see `pruner.ts`): copies
   * `b` in, returns the kept byte count (the bytes are at {@link out} in {@link bytes}; `b.length`:
   * nothing removed or malformed), or {@link WASM_FALLBACK}.
   */
  prune(root: number, leaves: number, found: number, nFound: number, b: Uint8Array): number {
    const n = b.length;
    const room = ((n + 127) & ~63);
    this.#ensure(this.#base + room * 2 + n * 8 + 256);
    this.#u8.set(b, this.#base);
    this.#end = this.#base + n;
    const out = this.#base + room;
    this.out = out;
    return this.#x.prune(root, leaves, found, nFound, this.#base, n, out, out + room);
  }

  #ensure(need: number): void {
    if (need > this.#u8.length) {
      this.#x.memory.grow(Math.ceil((need - this.#u8.length) / 65536));
      this.#u8 = new Uint8Array(this.#x.memory.buffer);
    }
  }

  /** Builds the module from source (`build.ts`) and instantiates it. */
  static async build(): Promise<{ scan: ScanWasm; module: WebAssembly.Module; buildMs: number; wasmBytes: number }> {
    const { bytes, ms } = await buildScanWasm();
    const module = new WebAssembly.Module(bytes);
    return { scan: new ScanWasm(module), module, buildMs: ms, wasmBytes: bytes.length };
  }

  /** Copies `b` into the module's memory (growing it when needed); offsets passed to {@link skip} are into `b`. */
  load(b: Uint8Array): void {
    this.#ensure(this.#base + b.length + 64);
    this.#u8.set(b, this.#base);
    this.#end = this.#base + b.length;
  }

  /** Index after the object or array at `b[i]` of the loaded `b`, or -1 (malformed): `skipContainer`'s contract. */
  skip(i: number): number {
    const base = this.#base;
    const r = this.#x.skip(base + i, this.#end);
    return r < 0 ? -1 : r - base;
  }

  /** SIMD blocks and scalar runs since the last reset (where the scanner's time goes). */
  counts(): { simdBlocks: number; scalarRuns: number } {
    return { simdBlocks: this.#x.simdBlockCount(), scalarRuns: this.#x.scalarRunCount() };
  }

  resetCounts(): void {
    this.#x.resetCounts();
  }
}
