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
  dataStart(): number;
  simdBlockCount(): number;
  scalarRunCount(): number;
  resetCounts(): void;
}

export class ScanWasm {
  readonly #x: ScanExports;
  readonly #base: number;
  #u8: Uint8Array;
  /** Length of the bytes last loaded (skip never reads past them). */
  #end = 0;

  constructor(module: WebAssembly.Module) {
    const instance = new WebAssembly.Instance(module, { env: { abort: () => { throw new Error("wasm abort"); } } });
    this.#x = instance.exports as unknown as ScanExports;
    this.#base = this.#x.dataStart();
    this.#u8 = new Uint8Array(this.#x.memory.buffer);
  }

  /** Builds the module from source (`build.ts`) and instantiates it. */
  static async build(): Promise<{ scan: ScanWasm; module: WebAssembly.Module; buildMs: number; wasmBytes: number }> {
    const { bytes, ms } = await buildScanWasm();
    const module = new WebAssembly.Module(bytes);
    return { scan: new ScanWasm(module), module, buildMs: ms, wasmBytes: bytes.length };
  }

  /** Copies `b` into the module's memory (growing it when needed); offsets passed to {@link skip} are into `b`. */
  load(b: Uint8Array): void {
    const need = this.#base + b.length + 64;
    if (need > this.#u8.length) {
      this.#x.memory.grow(Math.ceil((need - this.#u8.length) / 65536));
      this.#u8 = new Uint8Array(this.#x.memory.buffer);
    }
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
