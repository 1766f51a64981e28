/**
 * Runs an exec credential plugin: `node:child_process` spawn (works on Deno,
 * Bun and Node), no stdin, stdout/stderr captured with a size cap, killed
 * after a timeout. Knows nothing about ExecCredential; see `credentials.ts`.
 * @module
 */
import { concatBytes } from "../bytes.ts";
import { spawn } from "node:child_process";

/** One plugin run. */
export interface ExecRequest {
  command: string;
  args: string[];
  /** The complete environment of the child (caller merges the parent env). */
  env: Record<string, string>;
  /** Kill the plugin after this long (ms). */
  timeoutMs: number;
  /** Cap on captured stdout and on stderr, each (default 4 MiB). */
  maxOutputBytes?: number;
}

/** What the plugin did. */
export interface ExecResult {
  /** Exit code, or null when killed by a signal. */
  exitCode: number | null;
  signal: string | null;
  stdout: string;
  stderr: string;
}

/** Why a plugin could not be run (as opposed to running and failing). */
export type ExecFailureKind = "not-found" | "not-executable" | "timeout" | "output-too-large" | "spawn-failed";

/** A plugin that could not run to completion. The message never contains plugin output. */
export class ExecError extends Error {
  override readonly name = "ExecError";
  readonly kind: ExecFailureKind;
  constructor(kind: ExecFailureKind, message: string) {
    super(message);
    this.kind = kind;
  }
}

/** A function that runs a plugin (injectable for tests). */
export type RunExec = (req: ExecRequest) => Promise<ExecResult>;

function failureFromSpawnError(err: unknown, command: string): ExecError {
  const code = (err as { code?: unknown } | null)?.code;
  if (code === "ENOENT") return new ExecError("not-found", `${command}: command not found`);
  if (code === "EACCES" || code === "EPERM") {
    return new ExecError("not-executable", `${command}: permission denied (is it executable?)`);
  }
  const detail = typeof code === "string" ? code : (err as { message?: unknown } | null)?.message;
  return new ExecError("spawn-failed", `${command}: cannot start (${String(detail)})`);
}

/** Runs a plugin to completion. Rejects with {@link ExecError} when it cannot run or times out. */
export const runExec: RunExec = (req) =>
  new Promise<ExecResult>((resolve, reject) => {
    const max = req.maxOutputBytes ?? 4 * 1024 * 1024;
    let child: ReturnType<typeof spawn>;
    try {
      child = spawn(req.command, req.args, { env: req.env, stdio: ["ignore", "pipe", "pipe"], shell: false });
    } catch (err) {
      reject(failureFromSpawnError(err, req.command));
      return;
    }
    const out: Uint8Array[] = [];
    const errOut: Uint8Array[] = [];
    let outBytes = 0;
    let errBytes = 0;
    let settled = false;
    let failure: ExecError | undefined;
    const finish = (fn: () => void) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      fn();
    };
    const kill = (why: ExecError) => {
      failure ??= why;
      try {
        child.kill("SIGKILL");
      } catch {
        // already gone
      }
      // Do not wait for "close": a grandchild may still hold the pipes open.
      child.stdout?.destroy();
      child.stderr?.destroy();
      finish(() => reject(why));
    };
    const timer = setTimeout(
      () => kill(new ExecError("timeout", `${req.command}: timed out after ${req.timeoutMs} ms`)),
      req.timeoutMs,
    );
    child.stdout?.on("data", (chunk: Uint8Array) => {
      outBytes += chunk.byteLength;
      if (outBytes > max) kill(new ExecError("output-too-large", `${req.command}: output larger than ${max} bytes`));
      else out.push(chunk);
    });
    child.stderr?.on("data", (chunk: Uint8Array) => {
      errBytes += chunk.byteLength;
      if (errBytes <= max) errOut.push(chunk);
    });
    child.on("error", (err) => finish(() => reject(failure ?? failureFromSpawnError(err, req.command))));
    child.on("close", (exitCode, signal) =>
      finish(() => {
        if (failure) return reject(failure);
        resolve({ exitCode, signal: signal ?? null, stdout: decode(out), stderr: decode(errOut) });
      })
    );
  });

function decode(chunks: Uint8Array[]): string {
  return new TextDecoder().decode(concatBytes(chunks));
}
