#!/usr/bin/env node
// `npm start` and `bun run start` share one package.json script. This launcher
// runs the entry on the runtime that invoked the script: Bun when started by
// `bun run`, else Node (through tsx, since Node 20 cannot run TypeScript).
// (`deno task start` uses deno.json's own task and never gets here.)
//
// Signals: SIGINT/SIGTERM are passed on to the entry, and the launcher exits with the entry's
// code. A supervisor signals only the outermost process (npm or bun); npm passes SIGTERM to its
// script shell, and a shell that did not `exec` us dies without passing it on, so the launcher
// also watches its parent: when the parent is gone (re-parented to init or a subreaper) it
// stops the entry as if SIGTERM had come. The package.json scripts `exec` the launcher so the
// chain is npm → launcher → entry with no shell between.
import { spawn } from "node:child_process";
import { readlinkSync } from "node:fs";
import { createRequire } from "node:module";
import { basename } from "node:path";
import process from "node:process";

const [entry, ...args] = process.argv.slice(2);
if (!entry) {
  console.error("usage: node scripts/launch.mjs <entry.ts> [args...]");
  process.exit(2);
}

// Bun runs scripts as a direct child; `npx bun run start` keeps npm's user agent, so on Linux
// the parent's executable is the reliable sign.
const parentIsBun = () => {
  try {
    return /^bun/.test(basename(readlinkSync(`/proc/${process.ppid}/exe`)));
  } catch {
    return false;
  }
};
const onBun = process.versions.bun !== undefined;
const viaBun = onBun || (process.env.npm_config_user_agent ?? "").startsWith("bun/") || parentIsBun();

/** The Bun binary: this process when Bun runs the launcher (`bun run` puts a `node` → bun shim
 * on PATH when there is no Node), else node_modules' Bun (`npx bun run start` under Node). */
function bunBinary() {
  if (onBun) return process.execPath;
  try {
    return createRequire(import.meta.url).resolve("bun/bin/bun.exe");
  } catch {
    return "bun";
  }
}

const command = viaBun ? bunBinary() : process.execPath;
const argv = viaBun ? [entry, ...args] : ["--import", "tsx", entry, ...args];
const child = spawn(command, argv, { stdio: "inherit" });
child.on("error", (err) => {
  console.error(`launch: cannot start ${command}: ${err.message}`);
  process.exit(1);
});

const stop = (sig) => {
  if (child.exitCode === null && child.signalCode === null) child.kill(sig);
};
for (const sig of ["SIGINT", "SIGTERM"]) process.on(sig, () => stop(sig));

// The parent going away is the only sign left when a shell between npm and us ate the signal.
// Polling is the portable way (no PR_SET_PDEATHSIG from JS); the poll does not keep us alive.
const parent = process.ppid;
const watchParent = setInterval(() => {
  if (process.ppid !== parent) {
    clearInterval(watchParent);
    stop("SIGTERM");
  }
}, 250);
watchParent.unref?.();

child.on("exit", (code, signal) => process.exit(code ?? (signal ? 128 + (signal === "SIGINT" ? 2 : 15) : 1)));
