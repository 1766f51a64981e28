/**
 * Test helpers for reading watch streams over real HTTP: a line reader with per-read deadlines
 * that tolerates chunks split anywhere and the leading "\n" the sandbox sends on Bun.
 * Not part of the public sandbox API (mod.ts does not export it).
 * @module
 */
import type { Sandbox } from "./sandbox.ts";
import { startSandbox } from "./server.ts";
import type { SandboxOptions } from "./types.ts";

/** One parsed watch line. `type` is "MALFORMED" when the line is not JSON. */
export interface WatchLine {
  type: string;
  // deno-lint-ignore no-explicit-any
  object: any;
  raw: string;
}

/** Reads newline-delimited JSON events from a streaming response. */
export class WatchReader {
  readonly response: Response;
  /** Everything decoded so far (including partial lines). */
  text = "";
  #reader: ReadableStreamDefaultReader<Uint8Array>;
  #decoder = new TextDecoder();
  #buffer = "";
  #ended = false;
  #pending: Promise<ReadableStreamReadResult<Uint8Array>> | undefined;

  constructor(response: Response) {
    this.response = response;
    if (!response.body) throw new Error("response has no body");
    this.#reader = response.body.getReader();
  }

  /** True once the server ended the stream cleanly. */
  get ended(): boolean {
    return this.#ended;
  }

  /** Bytes received after the last complete line (e.g. half a line before a cut). */
  get partial(): string {
    return this.#buffer;
  }

  /**
   * The next event; null after a clean end. Rejects on a broken connection, or when nothing
   * arrives within `timeoutMs` (a deadline against hangs, not a timing assertion).
   */
  async next(timeoutMs = 5000): Promise<WatchLine | null> {
    for (;;) {
      const nl = this.#buffer.indexOf("\n");
      if (nl >= 0) {
        const raw = this.#buffer.slice(0, nl);
        this.#buffer = this.#buffer.slice(nl + 1);
        if (raw.trim() === "") continue;
        try {
          const parsed = JSON.parse(raw) as { type: string; object: unknown };
          return { type: parsed.type, object: parsed.object, raw };
        } catch {
          return { type: "MALFORMED", object: undefined, raw };
        }
      }
      if (this.#ended) return null;
      const { done, value } = await this.#read(timeoutMs);
      if (done) {
        this.text += this.#decoder.decode();
        this.#ended = true;
        continue;
      }
      const s = this.#decoder.decode(value, { stream: true });
      this.text += s;
      this.#buffer += s;
    }
  }

  /** Exactly `n` events (rejects if the stream ends first). */
  async take(n: number, timeoutMs = 5000): Promise<WatchLine[]> {
    const out: WatchLine[] = [];
    while (out.length < n) {
      const ev = await this.next(timeoutMs);
      if (ev === null) throw new Error(`stream ended after ${out.length} of ${n} events`);
      out.push(ev);
    }
    return out;
  }

  /** Every remaining event until the clean end. */
  async rest(timeoutMs = 5000): Promise<WatchLine[]> {
    const out: WatchLine[] = [];
    for (;;) {
      const ev = await this.next(timeoutMs);
      if (ev === null) return out;
      out.push(ev);
    }
  }

  /** Stops reading and closes the connection. */
  async cancel(): Promise<void> {
    await this.#reader.cancel().catch(() => {});
  }

  async #read(timeoutMs: number): Promise<ReadableStreamReadResult<Uint8Array>> {
    // Keep one read outstanding across timeouts so no chunk is lost.
    this.#pending ??= this.#reader.read();
    let timer: ReturnType<typeof setTimeout> | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`no watch data within ${timeoutMs} ms`)), timeoutMs);
    });
    try {
      const r = await Promise.race([this.#pending, timeout]);
      this.#pending = undefined;
      return r;
    } catch (e) {
      if (!(e instanceof Error && e.message.startsWith("no watch data"))) this.#pending = undefined;
      throw e;
    } finally {
      clearTimeout(timer);
    }
  }
}

/** GET a watch and wrap the response. */
export async function openWatch(url: string, init: RequestInit = {}): Promise<WatchReader> {
  return new WatchReader(await fetch(url, init));
}

/** Polls `cond` every few ms until true or the deadline passes (then rejects). */
export async function until(cond: () => boolean, what: string, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

/** Runs `fn` against a fresh sandbox served over HTTP on loopback, closing it afterwards. */
export async function withSandbox(
  options: SandboxOptions,
  fn: (ctx: { sandbox: Sandbox; url: string; api: string }) => Promise<void> | void,
): Promise<void> {
  const running = await startSandbox(options);
  try {
    await fn({ sandbox: running.sandbox, url: running.url, api: `${running.url}/apis/serving.knative.dev/v1` });
  } finally {
    await running.close();
  }
}

/** A JSON request; returns status, parsed body and headers. */
export async function call(
  url: string,
  init: { method?: string; body?: unknown; headers?: Record<string, string> } = {},
  // deno-lint-ignore no-explicit-any
): Promise<{ status: number; body: any; headers: Headers; text: string }> {
  const res = await fetch(url, {
    method: init.method ?? "GET",
    headers: { "content-type": "application/json", ...init.headers },
    body: init.body === undefined ? undefined : JSON.stringify(init.body),
  });
  const text = await res.text();
  let body: unknown = undefined;
  try {
    body = text ? JSON.parse(text) : undefined;
  } catch {
    body = undefined;
  }
  return { status: res.status, body, headers: res.headers, text };
}
