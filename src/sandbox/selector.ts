/**
 * Label and field selectors with the grammar of `k8s.io/apimachinery/pkg/labels` and
 * `pkg/fields`: `=`, `==`, `!=`, `in (…)`, `notin (…)`, `key`, `!key`, `>`/`<`, comma = AND.
 * @module
 */
import type { KubeObject } from "./types.ts";

/** A malformed selector; the HTTP API answers 400 BadRequest with its message. */
export class SelectorError extends Error {
  override readonly name = "SelectorError";
}

export type LabelOperator = "=" | "==" | "!=" | "in" | "notin" | "exists" | "!" | "gt" | "lt";

/** One requirement of a label selector. */
export interface Requirement {
  readonly key: string;
  readonly operator: LabelOperator;
  readonly values: readonly string[];
}

/** A parsed label selector. */
export interface LabelSelector {
  readonly requirements: readonly Requirement[];
  /** True for the empty selector (matches everything). */
  readonly empty: boolean;
  matches(labels: Record<string, string> | undefined): boolean;
}

type Token =
  | { kind: "id"; text: string }
  | { kind: "op"; text: "=" | "==" | "!=" | "!" | ">" | "<" | "in" | "notin" }
  | { kind: "(" | ")" | "," | "eof"; text: string };

const SPECIAL = new Set(["=", "!", "(", ")", ",", ">", "<"]);

function lex(input: string): Token[] {
  const out: Token[] = [];
  let i = 0;
  while (i < input.length) {
    const ch = input[i]!;
    if (/\s/.test(ch)) {
      i++;
      continue;
    }
    if (ch === "(" || ch === ")" || ch === ",") {
      out.push({ kind: ch, text: ch });
      i++;
      continue;
    }
    if (ch === "=") {
      if (input[i + 1] === "=") {
        out.push({ kind: "op", text: "==" });
        i += 2;
      } else {
        out.push({ kind: "op", text: "=" });
        i++;
      }
      continue;
    }
    if (ch === "!") {
      if (input[i + 1] === "=") {
        out.push({ kind: "op", text: "!=" });
        i += 2;
      } else {
        out.push({ kind: "op", text: "!" });
        i++;
      }
      continue;
    }
    if (ch === ">" || ch === "<") {
      out.push({ kind: "op", text: ch });
      i++;
      continue;
    }
    let j = i;
    while (j < input.length && !SPECIAL.has(input[j]!) && !/\s/.test(input[j]!)) j++;
    const text = input.slice(i, j);
    // "in" and "notin" are keywords only as whole words, as in the Go lexer.
    if (text === "in" || text === "notin") out.push({ kind: "op", text });
    else out.push({ kind: "id", text });
    i = j;
  }
  out.push({ kind: "eof", text: "end of string" });
  return out;
}

const NAME_RE = /^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/;
const DNS_SUBDOMAIN_RE = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

function validateKey(key: string): void {
  const slash = key.indexOf("/");
  const name = slash >= 0 ? key.slice(slash + 1) : key;
  if (slash >= 0) {
    const prefix = key.slice(0, slash);
    if (prefix.length === 0 || prefix.length > 253 || !DNS_SUBDOMAIN_RE.test(prefix)) {
      throw new SelectorError(`invalid label key "${key}": prefix part must be a lowercase RFC 1123 subdomain`);
    }
  }
  if (name.length === 0 || name.length > 63 || !NAME_RE.test(name)) {
    throw new SelectorError(
      `invalid label key "${key}": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character, at most 63 characters`,
    );
  }
}

function validateValue(key: string, value: string): void {
  if (value.length > 63 || (value.length > 0 && !NAME_RE.test(value))) {
    throw new SelectorError(
      `invalid label value: "${value}" for key "${key}": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character, at most 63 characters`,
    );
  }
}

class Parser {
  #tokens: Token[];
  #pos = 0;
  constructor(tokens: Token[]) {
    this.#tokens = tokens;
  }
  peek(): Token {
    return this.#tokens[this.#pos]!;
  }
  take(): Token {
    return this.#tokens[this.#pos++]!;
  }
}

function expected(found: Token, what: string): SelectorError {
  return new SelectorError(`unable to parse requirement: found '${found.text}', expected: ${what}`);
}

function parseRequirement(p: Parser): Requirement {
  let tok = p.take();
  if (tok.kind === "op" && tok.text === "!") {
    const key = p.take();
    if (key.kind !== "id") throw expected(key, "identifier after '!'");
    validateKey(key.text);
    return { key: key.text, operator: "!", values: [] };
  }
  if (tok.kind !== "id") throw expected(tok, "!, identifier");
  const key = tok.text;
  validateKey(key);
  const next = p.peek();
  if (next.kind === "eof" || next.kind === ",") return { key, operator: "exists", values: [] };
  tok = p.take();
  if (tok.kind !== "op" || tok.text === "!") throw expected(tok, "=, !=, ==, in, notin, >, <");
  const op = tok.text;
  if (op === "in" || op === "notin") {
    const open = p.take();
    if (open.kind !== "(") throw expected(open, "'('");
    const values: string[] = [];
    for (;;) {
      const t = p.take();
      if (t.kind === ")") {
        if (values.length === 0) break;
        // A trailing comma leaves an empty value, which the Go parser also accepts.
        values.push("");
        break;
      }
      if (t.kind === "id") {
        values.push(t.text);
        const after = p.take();
        if (after.kind === ")") break;
        if (after.kind !== ",") throw expected(after, "',' or ')'");
        continue;
      }
      if (t.kind === ",") {
        values.push("");
        continue;
      }
      throw expected(t, "identifier, ',' or ')'");
    }
    if (values.length === 0) throw new SelectorError(`for 'in', 'notin' operators, values set can't be empty`);
    for (const v of values) validateValue(key, v);
    return { key, operator: op, values };
  }
  // Single value; an empty value ("a=") is allowed.
  const v = p.peek();
  let value = "";
  if (v.kind === "id") value = p.take().text;
  else if (v.kind !== "eof" && v.kind !== ",") throw expected(v, "identifier");
  if (op === ">" || op === "<") {
    if (!/^-?\d+$/.test(value)) {
      throw new SelectorError(`for 'Gt', 'Lt' operators, the value must be an integer: "${value}"`);
    }
    return { key, operator: op === ">" ? "gt" : "lt", values: [value] };
  }
  validateValue(key, value);
  return { key, operator: op as "=" | "==" | "!=", values: [value] };
}

function matchRequirement(r: Requirement, labels: Record<string, string> | undefined): boolean {
  const has = labels !== undefined && Object.prototype.hasOwnProperty.call(labels, r.key);
  const value = has ? labels![r.key]! : undefined;
  switch (r.operator) {
    case "=":
    case "==":
    case "in":
      return has && r.values.includes(value!);
    case "!=":
    case "notin":
      return !has || !r.values.includes(value!);
    case "exists":
      return has;
    case "!":
      return !has;
    case "gt":
    case "lt": {
      if (!has || !/^-?\d+$/.test(value!)) return false;
      const a = Number(value);
      const b = Number(r.values[0]);
      return r.operator === "gt" ? a > b : a < b;
    }
  }
}

/** Parses a `labelSelector` query value; throws {@link SelectorError}. */
export function parseLabelSelector(input: string): LabelSelector {
  const p = new Parser(lex(input));
  const requirements: Requirement[] = [];
  for (;;) {
    const tok = p.peek();
    if (tok.kind === "eof") {
      if (requirements.length > 0) throw expected(tok, "identifier after ','");
      break;
    }
    if (tok.kind !== "id" && !(tok.kind === "op" && tok.text === "!")) {
      throw expected(tok, "!, identifier, or 'end of string'");
    }
    requirements.push(parseRequirement(p));
    const sep = p.take();
    if (sep.kind === "eof") break;
    if (sep.kind !== ",") throw expected(sep, "',' or 'end of string'");
  }
  return {
    requirements,
    empty: requirements.length === 0,
    matches: (labels) => requirements.every((r) => matchRequirement(r, labels)),
  };
}

/** A parsed field selector over `metadata.name` and `metadata.namespace`. */
export interface FieldSelector {
  readonly empty: boolean;
  matches(obj: KubeObject): boolean;
}

const FIELDS = ["metadata.name", "metadata.namespace"] as const;
type Field = (typeof FIELDS)[number];

/** Splits on unescaped `sep`, keeping escapes for the next step. */
function splitUnescaped(s: string, sep: string): string[] {
  const parts: string[] = [];
  let cur = "";
  for (let i = 0; i < s.length; i++) {
    const ch = s[i]!;
    if (ch === "\\" && i + 1 < s.length) {
      cur += ch + s[i + 1];
      i++;
    } else if (ch === sep) {
      parts.push(cur);
      cur = "";
    } else cur += ch;
  }
  parts.push(cur);
  return parts;
}

function unescape(s: string): string {
  return s.replace(/\\(.)/g, "$1");
}

/** Parses a `fieldSelector` query value; throws {@link SelectorError}. */
export function parseFieldSelector(input: string): FieldSelector {
  const terms: { field: Field; negate: boolean; value: string }[] = [];
  if (input.trim() !== "") {
    for (const term of splitUnescaped(input, ",")) {
      // Find the first unescaped operator.
      const m = /^((?:[^\\=!]|\\.)*)(==|!=|=)(.*)$/.exec(term);
      if (!m) throw new SelectorError(`invalid selector: '${input}'; can't understand '${term}'`);
      const field = unescape(m[1]!.trim());
      if (!(FIELDS as readonly string[]).includes(field)) {
        throw new SelectorError(`"${field}" is not a known field selector: only "metadata.name", "metadata.namespace"`);
      }
      terms.push({ field: field as Field, negate: m[2] === "!=", value: unescape(m[3]!.trim()) });
    }
  }
  return {
    empty: terms.length === 0,
    matches: (obj) =>
      terms.every((t) => {
        const actual = t.field === "metadata.name" ? obj.metadata.name : obj.metadata.namespace;
        return t.negate ? actual !== t.value : actual === t.value;
      }),
  };
}

/** Matches everything. */
export const EVERYTHING: LabelSelector & FieldSelector = {
  requirements: [],
  empty: true,
  matches: () => true,
};
