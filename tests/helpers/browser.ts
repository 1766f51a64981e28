/**
 * Headless Chromium for the board test and benchmark (tests/board.test.ts,
 * bench/board/board.ts): Debian's `chromium` driven by `playwright-core` (Node
 * only). `browserSkip()` says why the browser test cannot run here; in CI
 * (`CI=true`) a missing Chromium is a failure, not a skip.
 */
import { existsSync } from "node:fs";
import { runtimeName } from "../../src/runtime.ts";

/** Where Chromium is (Debian's package): `APPWATCH_CHROMIUM` overrides. */
export const CHROMIUM_PATH: string = process.env.APPWATCH_CHROMIUM ?? "/usr/bin/chromium";

/** True when running in CI (where the browser test must run). */
export const IN_CI: boolean = process.env.CI === "true" || process.env.CI === "1";

/**
 * Why the browser test is skipped on this runtime/machine, or `false` when it
 * runs. A missing Chromium in CI is not a skip: the test runs and fails.
 */
export function browserSkip(): string | false {
  if (runtimeName() !== "node") {
    const msg = `SKIPPED on ${runtimeName()}: the board's browser test runs on Node only (playwright-core does not run reliably on Deno or Bun); it runs in the Node step of npm test`;
    console.log(`board test: ${msg}`);
    return msg;
  }
  if (!existsSync(CHROMIUM_PATH) && !IN_CI) {
    const msg = `SKIPPED: no Chromium at ${CHROMIUM_PATH}: the live board was NOT tested in a browser. Install it (apt-get install -y chromium) or set APPWATCH_CHROMIUM; .ci/run installs it and CI fails without it`;
    console.warn("\n" + "!".repeat(78) + "\n!! " + msg + "\n" + "!".repeat(78) + "\n");
    return msg;
  }
  return false;
}

// Types kept structural so this file type-checks on Deno without resolving playwright-core's types.
// deno-lint-ignore no-explicit-any
export type Browser = any;
// deno-lint-ignore no-explicit-any
export type Page = any;

/** Launches headless Chromium (fails with a clear message when it is missing). */
export async function launchChromium(): Promise<Browser> {
  if (!existsSync(CHROMIUM_PATH)) throw new Error(`Chromium is missing at ${CHROMIUM_PATH} (CI=${process.env.CI}): .ci/run installs Debian's chromium package`);
  const { chromium } = await import("playwright-core");
  return await chromium.launch({ executablePath: CHROMIUM_PATH, args: ["--no-sandbox", "--disable-dev-shm-usage"] });
}

/** Console errors and uncaught exceptions of a page, except messages matching `allowed`. */
export function collectErrors(page: Page, allowed: RegExp[] = []): string[] {
  const errors: string[] = [];
  page.on("console", (m: { type(): string; text(): string }) => {
    if (m.type() !== "error") return;
    const text = m.text();
    if (!allowed.some((re) => re.test(text))) errors.push(`console.error: ${text}`);
  });
  page.on("pageerror", (e: Error) => errors.push(`uncaught: ${e.stack ?? e.message}`));
  return errors;
}

/** Console messages Chromium prints itself while a server is down or refuses a connection. */
export const CONNECTION_NOISE: RegExp[] = [/WebSocket connection to .* failed/, /net::ERR_CONNECTION_(REFUSED|RESET|CLOSED)/];
