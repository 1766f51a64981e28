/**
 * A YAML parse error (the `yaml` package's) as one line that says where and what: `line 3,
 * column 1: Flow sequence … must end with a ]`. The package's own message ends in a colon and a
 * code frame of the source; the frame is dropped, since a config file or a kubeconfig can hold
 * tokens, and messages never echo a secret.
 * @module
 */

/** `line L, column C: <problem>` (just the problem when the error has no position). */
export function yamlErrorText(err: unknown): string {
  const e = err as { message?: unknown; linePos?: readonly { line: number; col: number }[] } | null;
  const message = typeof e?.message === "string" ? e.message : String(err);
  const problem = (message.split("\n")[0] ?? "").replace(/\s+at line \d+, column \d+:?\s*$/, "").replace(/:\s*$/, "").trim() || "parse error";
  const pos = e?.linePos?.[0];
  return pos ? `line ${pos.line}, column ${pos.col}: ${problem}` : problem;
}
