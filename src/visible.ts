/**
 * Text read from the cluster, made safe to show: control characters (C0, DEL, C1), bidirectional
 * overrides and isolates, and zero-width characters become visible `\uXXXX` escapes, so an app
 * named with U+202E or NUL cannot reorder or hide what a board or terminal shows (issue 24, F14).
 * The App itself keeps Flyte's exact strings; only what a person reads is escaped.
 *
 * @example
 * ```ts
 * import { visible } from "./visible.ts";
 * visible("evil\u202Etxt.exe"); // "evil\\u202Etxt.exe"
 * ```
 * @module
 */

/** Characters that hide, reorder or control what is shown. The board's client.js keeps a copy (it is served as is). */
// Not global: a /g regex carries `lastIndex` between calls (module state).
export const INVISIBLE = /[\u0000-\u001F\u007F-\u009F\u061C\u200B-\u200F\u2028-\u202E\u2060-\u2069\uFEFF]/;

/** `s` with every {@link INVISIBLE} character as a `\uXXXX` escape. */
export function visible(s: string): string {
  if (!INVISIBLE.test(s)) return s;
  return s.replace(new RegExp(INVISIBLE.source, "g"), (c) => `\\u${c.charCodeAt(0).toString(16).toUpperCase().padStart(4, "0")}`);
}

/** Whether `s` holds a character {@link visible} would escape. */
export function hasInvisible(s: string): boolean {
  return INVISIBLE.test(s);
}

/**
 * Why an app identity is hard to address or to read, or undefined when it is not: an empty part
 * (Flyte keeps an app-id of `//` as three empty strings), a `/` in a part (the REST path needs it
 * percent-encoded), or an {@link INVISIBLE} character.
 */
export function oddIdentity(id: { project?: string; domain?: string; name?: string; org?: string }): string | undefined {
  const parts = { project: id.project ?? "", domain: id.domain ?? "", name: id.name ?? "" };
  const empty = Object.entries(parts).filter(([, v]) => v === "").map(([k]) => k);
  if (empty.length) return `empty ${empty.join(", ")}`;
  const all = [id.org ?? "", parts.project, parts.domain, parts.name];
  if (all.some(hasInvisible)) return "control, bidirectional or zero-width characters";
  if (all.some((p) => p.includes("/"))) return "a '/' inside a part";
  return undefined;
}
