/**
 * B3 limit: starts this runtime's bare broadcast server (`bare-{node,deno,bun}.ts`) as a
 * child process for `bench/fanout/fanout.ts --bare`, speaks its JSON-lines protocol
 * (`../lib/bare-common.ts`), and reads its CPU time and RSS from /proc/<pid> — the same counters
 * `fanout.ts` reads for appwatch from /proc/self, taken by the driver so that no command to the
 * child sits inside the measured window.
 * @module
 */
import process from "node:process";
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { jsonLines } from "../lib/json-lines.ts";

export interface Bare {
  url: string;
  pid: number;
  version: string;
  send(cmd: unknown): Promise<Record<string, unknown>>;
  cpuSeconds(): number;
  rssBytes(): number;
  stop(): void;
}

// deno-lint-ignore no-explicit-any
const g = globalThis as any;

/** Spawns the bare server of the runtime this process runs on, with the same flags appwatch runs with here. */
export async function startBare(root: string): Promise<Bare> {
  // BENCH_BARE_CPU_PROF_DIR: a V8 CPU profile of the whole bare process (Node, Deno), written at its exit.
  const profDir = process.env.BENCH_BARE_CPU_PROF_DIR;
  const prof = profDir ? ["--cpu-prof", `--cpu-prof-dir=${profDir}`] : [];
  const [cmd, args] = g.Deno?.version?.deno
    ? [g.Deno.execPath() as string, ["run", "-A", ...prof, "bench/fanout/bare-deno.ts"]]
    : g.Bun
    ? [process.execPath, ["bench/fanout/bare-bun.ts"]]
    : [process.execPath, [...prof, "--import", "tsx", "bench/fanout/bare-node.ts"]];
  const proc = spawn(cmd, args, { cwd: root, stdio: ["pipe", "pipe", "inherit"] });
  const { next, send } = jsonLines(proc);
  let stopping = false;
  proc.once("exit", (code) => {
    if (!stopping) {
      console.error(`BENCHMARK FAILED: the bare server exited with ${code}`);
      process.exit(1);
    }
  });
  const ready = (await next()).ready as { url: string; pid: number; version: string };
  const pid = ready.pid;
  return {
    url: ready.url,
    pid,
    version: ready.version,
    send,
    cpuSeconds() {
      const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
      const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      return (Number(f[11]) + Number(f[12])) / 100;
    },
    rssBytes() {
      return Number(readFileSync(`/proc/${pid}/statm`, "utf8").split(" ")[1]) * 4096;
    },
    stop() {
      stopping = true;
      proc.stdin!.write(JSON.stringify({ exit: {} }) + "\n");
      setTimeout(() => proc.kill(), 2000).unref?.();
    },
  };
}
