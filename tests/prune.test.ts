import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { EACH, JsonPruner, listPathsOf, MAX_DEPTH, type PrunePaths, pruneJson } from "../src/watch/prune.ts";
import { ndjsonValues } from "../src/watch/ndjson.ts";
import { seededRandom } from "../src/prng.ts";
import { kserviceToApp } from "../src/flyte/convert.ts";
import { DEFAULT_APPS_CONFIG } from "../src/flyte/model.ts";
import type { KubeObject } from "../src/watch/types.ts";
import { generateEvents } from "../bench/lib/data.ts";

const enc = new TextEncoder();
const dec = new TextDecoder();

const WATCH_PATHS: PrunePaths = [["object", "metadata", "managedFields"], ["object", "spec"]];
const LIST_PATHS: PrunePaths = [["items", "*", "metadata", "managedFields"], ["items", "*", "spec"]];

function pruneText(text: string, paths: PrunePaths = WATCH_PATHS): string {
  return dec.decode(pruneJson(enc.encode(text), paths));
}

/** What JSON.parse(prune(text)) must equal: the parsed document with the paths deleted. */
function expected(value: unknown, paths: PrunePaths): unknown {
  const copy = structuredClone(value);
  for (const path of paths) deletePath(copy, path, 0);
  return copy;
}

function deletePath(node: unknown, path: readonly string[], d: number): void {
  if (path[d] === EACH) {
    // The wildcard: every element of an array (an object there is left alone).
    if (!Array.isArray(node)) return;
    if (d === path.length - 1) node.length = 0;
    else for (const el of node) deletePath(el, path, d + 1);
    return;
  }
  if (node === null || typeof node !== "object" || Array.isArray(node)) return;
  const o = node as Record<string, unknown>;
  const key = path[d]!;
  if (!Object.hasOwn(o, key)) return;
  if (d === path.length - 1) delete o[key];
  else deletePath(o[key], path, d + 1);
}

describe("JsonPruner: table cases", () => {
  const cases: Array<[string, string, string, PrunePaths?]> = [
    ["removes a middle member with the comma after it", `{"type":"MODIFIED","object":{"a":1,"spec":{"x":[1,2]},"b":2}}`, `{"type":"MODIFIED","object":{"a":1,"b":2}}`],
    ["removes a first member", `{"object":{"spec":{},"b":2}}`, `{"object":{"b":2}}`],
    ["removes a last member with the comma before it", `{"object":{"a":1,"spec":[1,{"q":"}"}]}}`, `{"object":{"a":1}}`],
    ["removes the only member", `{"object":{"spec":{"a":{"b":{}}}}}`, `{"object":{}}`],
    ["removes two neighbours, the last one last", `{"object":{"a":1,"spec":1,"metadata":{"managedFields":[],"name":"n"}}}`, `{"object":{"a":1,"metadata":{"name":"n"}}}`],
    ["removes everything of an object in pieces", `{"object":{"spec":1,"metadata":{"managedFields":[{}]}}}`, `{"object":{"metadata":{}}}`],
    ["removes a middle removed-after-removed member", `{"object":{"spec":1,"metadata":{"managedFields":2}}}`, `{"object":{"metadata":{}}}`],
    ["keeps keys that merely contain the name", `{"object":{"specs":1,"xspec":2,"spec ":3,"Spec":4}}`, `{"object":{"specs":1,"xspec":2,"spec ":3,"Spec":4}}`],
    ["keeps the same name at other paths", `{"spec":1,"object":{"status":{"spec":2},"metadata":{"spec":3,"x":{"managedFields":4}}},"metadata":{"managedFields":5}}`, `{"spec":1,"object":{"status":{"spec":2},"metadata":{"spec":3,"x":{"managedFields":4}}},"metadata":{"managedFields":5}}`],
    ["keeps the name when it is a string value", `{"object":{"a":"spec","b":"\\"spec\\":1"}}`, `{"object":{"a":"spec","b":"\\"spec\\":1"}}`],
    ["matches an escaped key by its value", `{"object":{"sp\\u0065c":{"a":1},"b":2}}`, `{"object":{"b":2}}`],
    ["escaped quotes and backslashes inside removed strings", `{"object":{"spec":{"a":"x\\"}y","b":"\\\\","c":"\\\\\\"]"},"z":1}}`, `{"object":{"z":1}}`],
    ["escaped quotes and backslashes inside kept strings", `{"object":{"k":"\\\\\\"spec\\"","spec":0}}`, `{"object":{"k":"\\\\\\"spec\\""}}`],
    ["long strings with escapes (native search path)", `{"object":{"a":"${"x".repeat(100)}\\\\\\\\","spec":"${"y".repeat(100)}\\"${"z".repeat(50)}\\\\","b":1}}`, `{"object":{"a":"${"x".repeat(100)}\\\\\\\\","b":1}}`],
    ["unicode escapes and multi-byte UTF-8", `{"object":{"n":"é☕😀\\u00e9","spec":{"d":"東京 \\ud83d\\ude00 ß"},"m":"Ω"}}`, `{"object":{"n":"é☕😀\\u00e9","m":"Ω"}}`],
    ["whitespace everywhere", ` { "object" :\t{ "a" : 1 ,\r\n "spec" : { "x" : [ 1 , 2 ] } , "b" : [ ] } } `, ` { "object" :\t{ "a" : 1 ,\r\n  "b" : [ ] } } `],
    ["whitespace around a removed last member", `{"object":{"a":1 , "spec" : 2 }}`, `{"object":{"a":1  }}`],
    ["empty objects and arrays", `{"object":{},"x":[],"y":{}}`, `{"object":{},"x":[],"y":{}}`],
    ["empty removed values", `{"object":{"spec":{},"metadata":{"managedFields":[]}}}`, `{"object":{"metadata":{}}}`],
    ["scalars as removed values", `{"object":{"spec":null,"a":true,"metadata":{"managedFields":-1.5e3}}}`, `{"object":{"a":true,"metadata":{}}}`],
    ["a path through a non-object is left alone", `{"object":[{"spec":1}],"x":{"object":1}}`, `{"object":[{"spec":1}],"x":{"object":1}}`],
    ["object as a string is left alone", `{"object":"{\\"spec\\":1}"}`, `{"object":"{\\"spec\\":1}"}`],
    ["duplicate keys: the first occurrence goes, then the walk stops", `{"object":{"spec":1,"a":2,"spec":3}}`, `{"object":{"a":2,"spec":3}}`, [["object", "spec"]]],
    ["duplicate keys: every occurrence goes while a path is still missing", `{"object":{"spec":1,"a":2,"spec":3}}`, `{"object":{"a":2}}`],
    ["duplicate keys before the last path is found: removed again", `{"object":{"spec":1,"spec":2,"metadata":{"managedFields":3}}}`, `{"object":{"metadata":{}}}`],
    ["the rest after the last removal is kept unread", `{"object":{"metadata":{"managedFields":1},"spec":2,"status":{"x":1}},"z":[1]}`, `{"object":{"metadata":{},"status":{"x":1}},"z":[1]}`],
    ["top-level path", `{"a":1,"b":{"c":2},"d":3}`, `{"a":1,"d":3}`, [["b"]]],
    ["a removed ancestor wins over a deeper path", `{"a":{"b":1},"c":2}`, `{"c":2}`, [["a", "b"], ["a"]]],
    ["deep nesting inside a removed value", `{"object":{"spec":${"[".repeat(200)}${"]".repeat(200)},"k":1}}`, `{"object":{"k":1}}`],
    ["no match: same bytes back", `{"type":"BOOKMARK","object":{"metadata":{"resourceVersion":"12"}}}`, `{"type":"BOOKMARK","object":{"metadata":{"resourceVersion":"12"}}}`],
  ];
  for (const [name, input, output, paths] of cases) {
    test(name, () => {
      const got = pruneText(input, paths ?? WATCH_PATHS);
      assert.equal(got, output);
      if (!name.startsWith("duplicate keys: the first")) assert.deepEqual(JSON.parse(got), expected(JSON.parse(input), paths ?? WATCH_PATHS));
    });
  }

  test("returns the very same array when nothing is removed", () => {
    const bytes = enc.encode(`{"object":{"metadata":{"name":"a"}}}`);
    assert.equal(pruneJson(bytes, WATCH_PATHS), bytes);
  });

  test("works on a subarray view (offsets inside a bigger buffer)", () => {
    const big = enc.encode(`xx{"object":{"spec":1,"a":2}}yy`);
    const view = big.subarray(2, big.length - 2);
    assert.equal(dec.decode(pruneJson(view, WATCH_PATHS)), `{"object":{"a":2}}`);
  });

  test("pruneToString reuses its scratch buffer safely across lines", () => {
    const p = new JsonPruner(WATCH_PATHS);
    const long = `{"object":{"spec":"${"s".repeat(40_000)}","a":"${"a".repeat(30_000)}"}}`;
    const short = `{"object":{"spec":1,"b":2}}`;
    assert.equal(p.pruneToString(enc.encode(long), dec), `{"object":{"a":"${"a".repeat(30_000)}"}}`);
    assert.equal(p.pruneToString(enc.encode(short), dec), `{"object":{"b":2}}`);
    assert.equal(p.pruneToString(enc.encode(long), dec), `{"object":{"a":"${"a".repeat(30_000)}"}}`);
  });

  test("the same array reused for another line", () => {
    const p = new JsonPruner(WATCH_PATHS);
    const buf = enc.encode(`{"object":{"spec":"${"a\\\\".repeat(30)}","b":1}}`);
    assert.equal(dec.decode(p.prune(buf)), `{"object":{"b":1}}`);
    buf.set(enc.encode(`{"object":{"spec":"${"a".repeat(60)}\\"`));
    assert.equal(p.prune(buf), buf); // now the string never ends
  });

  test("rejects empty paths", () => {
    assert.throws(() => new JsonPruner([[]]), TypeError);
  });
});

describe("JsonPruner: the array wildcard (list pages)", () => {
  const page = (items: string, rest = `,"metadata":{"resourceVersion":"9","continue":""}`) => `{"apiVersion":"v1","kind":"List","items":${items}${rest}}`;
  const cases: Array<[string, string, string, PrunePaths?]> = [
    [
      "cuts managedFields and spec of every item, keeps the rest",
      page(`[{"metadata":{"name":"a","managedFields":[{"m":"x"}],"uid":"1"},"spec":{"t":[1]},"status":{"s":1}},{"metadata":{"managedFields":[]},"spec":2},{"status":{}}]`),
      page(`[{"metadata":{"name":"a","uid":"1"},"status":{"s":1}},{"metadata":{}},{"status":{}}]`),
    ],
    ["an empty items array", page(`[]`), page(`[]`)],
    ["an empty items array with whitespace", page(`[ \n ]`), page(`[ \n ]`)],
    ["elements that are not objects are kept as they are", page(`[1,"spec",null,[{"spec":1}],{"spec":1,"a":0},true]`), page(`[1,"spec",null,[{"spec":1}],{"a":0},true]`)],
    ["items as an object: a wildcard matches array elements only", `{"items":{"*":{"spec":1},"a":{"spec":2}}}`, `{"items":{"*":{"spec":1},"a":{"spec":2}}}`],
    ["items as a string is left alone", JSON.stringify({ items: JSON.stringify([{ spec: 1 }]), x: 1 }), JSON.stringify({ items: JSON.stringify([{ spec: 1 }]), x: 1 })],
    ["the same names outside items are kept", `{"spec":1,"metadata":{"managedFields":2},"items":[{"spec":3,"x":{"spec":4}}],"object":{"spec":5}}`, `{"spec":1,"metadata":{"managedFields":2},"items":[{"x":{"spec":4}}],"object":{"spec":5}}`],
    ["duplicate keys inside items: every occurrence goes", page(`[{"spec":1,"a":2,"spec":3},{"spec":4}]`), page(`[{"a":2},{}]`)],
    [
      "strings with brackets, quotes and escapes inside items",
      JSON.stringify({ items: [{ a: "]}[{\\\"", spec: { b: "\\]\"}", c: "[[" }, c: "spec" }, { spec: "\\" }, { spec: ["]", "\"]"] }] }),
      JSON.stringify({ items: [{ a: "]}[{\\\"", c: "spec" }, {}, {}] }),
    ],
    ["a \\u escape of a bracket inside a removed string", String.raw`{"items":[{"spec":"\u005d\"]","a":1}]}`, `{"items":[{"a":1}]}`],
    ["an escaped items key matches by its value", String.raw`{"it\u0065ms":[{"sp\u0065c":1,"a":2}]}`, String.raw`{"it\u0065ms":[{"a":2}]}`],
    ["whitespace everywhere", ` { "items" : [ { "spec" : 1 , "a" : 2 } , { "a" : 3 , "spec" : [ ] } ] } `, ` { "items" : [ {  "a" : 2 } , { "a" : 3  } ] } `],
    ["[\"items\", \"*\"] empties the array", `{"items":[1,{"a":2},[3],"x"],"b":1}`, `{"items":[],"b":1}`, [["items", "*"]]],
    ["[\"items\", \"*\"] with whitespace", `{"items":[ 1 , 2 ]}`, `{"items":[   ]}`, [["items", "*"]]],
    ["removing every element wins over a path inside them", `{"items":[{"spec":1}],"b":1}`, `{"items":[],"b":1}`, [["items", "*", "spec"], ["items", "*"]]],
    ["nested wildcards", `{"a":[[{"x":1,"y":2}],[{"x":3}],[],5]}`, `{"a":[[{"y":2}],[{}],[],5]}`, [["a", "*", "*", "x"]]],
    ["a wildcard at the root of an array document", `[{"spec":1,"a":2},{"spec":3}]`, `[{"a":2},{}]`, [["*", "spec"]]],
    ["a wildcard and a plain path together: the walk goes on to the end", `{"kind":"List","items":[{"spec":1}],"metadata":{"x":1},"items2":2}`, `{"items":[{}],"metadata":{"x":1},"items2":2}`, [["kind"], ["items", "*", "spec"]]],
    ["a key and a wildcard at the same level", `{"items":[{"spec":1}],"x":{"items":1}}`, `{"items":[{}],"x":{}}`, [["items", "*", "spec"], ["x", "items"]]],
    ["deep nesting inside removed values", page(`[{"spec":${"[".repeat(200)}${"]".repeat(200)},"k":1}]`), page(`[{"k":1}]`)],
    ["no match: same bytes back", page(`[{"metadata":{"name":"a"}},{"status":{}}]`), page(`[{"metadata":{"name":"a"}},{"status":{}}]`)],
  ];
  for (const [name, input, output, paths] of cases) {
    test(name, () => {
      const p = paths ?? LIST_PATHS;
      const got = pruneText(input, p);
      assert.equal(got, output);
      assert.deepEqual(JSON.parse(got), expected(JSON.parse(input), p));
    });
  }

  test("listPathsOf: watch-event paths (object.X) become list-page paths (items.*.X); others are dropped", () => {
    assert.deepEqual(listPathsOf(WATCH_PATHS), LIST_PATHS);
    assert.deepEqual(listPathsOf([["type"], ["object"], ["object", "status", "x"], ["other", "spec"]]), [["items", "*", "status", "x"]]);
    assert.deepEqual(listPathsOf([]), []);
  });

  test("pruneInPlace: the kept bytes at the front, equal to prune(); untouched when nothing is removed or malformed", () => {
    const p = new JsonPruner(LIST_PATHS);
    for (const text of [
      page(`[{"spec":1,"a":"${"é".repeat(50)}","metadata":{"managedFields":[{}],"n":1}},{"b":2,"spec":{}}]`),
      page(`[{"a":1},{"spec":2}]`),
      `{"items":[{"spec":1}]}`,
      `{"items":[{"a":1,"spec":1}],"z":[1,2,3]}`,
    ]) {
      const bytes = enc.encode(text);
      const want = dec.decode(p.prune(bytes));
      const buf = enc.encode(text);
      const kept = p.pruneInPlace(buf);
      assert.equal(dec.decode(buf.subarray(0, kept)), want);
    }
    for (const text of [page(`[{"a":1}]`), `{"items":[{"spec":1},]}`]) {
      const buf = enc.encode(text);
      assert.equal(p.pruneInPlace(buf), buf.length);
      assert.equal(dec.decode(buf), text);
    }
  });

  test("a subarray view is pruned in place within its bounds", () => {
    const big = enc.encode(`xx{"items":[{"spec":1,"a":2}]}yy`);
    const view = big.subarray(2, big.length - 2);
    const kept = new JsonPruner(LIST_PATHS).pruneInPlace(view);
    assert.equal(dec.decode(view.subarray(0, kept)), `{"items":[{"a":2}]}`);
    assert.equal(dec.decode(big.subarray(0, 2)), "xx");
    assert.equal(dec.decode(big.subarray(big.length - 2)), "yy");
  });

  const bad = [
    `{"items":[{"spec":1},]}`, // trailing comma in the array
    `{"items":[,{"spec":1}]}`, // leading comma
    `{"items":[{"spec":1},,{"spec":2}]}`,
    `{"items":[{"spec":1} {"spec":2}]}`, // missing comma between elements
    `{"items":[{"spec":1}}`, // mismatched: } closes [
    `{"items":[{"spec":1}],}`,
    `{"items":[{"spec":{"a":1}]}`, // the element never closes
    `{"items":[{"spec":1}]`, // truncated
    `{"items":[{"spec":1}]}]`, // trailing bytes
    `{"items":[{"spec":1},{"spec":{"a":[}]}]}`, // damage inside a removed value of a later element
    `{"items":[{"spec":1},{"a":"unterminated}]}`,
    `{"items":[{"spec":1}],"metadata":{"continue":"x"}`, // the rest after items is still checked
    `{"items":[{"spec":1}],"metadata":{"continue" "x"}}`,
    `{"items":[{"spec":1}, x]}`, // bare text as an element
    `{"items":[{"spec":1}, ]}`,
  ];
  for (const text of bad) {
    test(`malformed page is returned unchanged: ${JSON.stringify(text)}`, () => {
      const bytes = enc.encode(text);
      assert.equal(pruneJson(bytes, LIST_PATHS), bytes);
      assert.equal(pruneJson(bytes, [["items", "*"]]), bytes);
    });
  }
});

describe("JsonPruner: malformed input is returned unchanged", () => {
  const bad = [
    `{"object":{"spec":{"a":1}}`, // unclosed top level
    `{"object":{"spec":{"a":1}}}}`, // trailing bytes
    `{"object":{"spec":{"a":1}}} x`,
    `{"object":{"spec":{"a":"unterminated}}}`,
    `{"object":{"spec":{"a":"x\\"}}}`, // escaped quote leaves the string open
    `{"object":{"spec":{"a":[1}},"b":1}}`, // mismatched brackets inside a removed value
    `{"object":{"spec":{"a":{1]},"b":1}}`,
    `{"object":{"spec":]}`,
    `{"object":{"spec":{"a":"\\e"},"b":1}}`, // unknown escape inside a removed string
    `{"object":{"spec":{"a":"${"x".repeat(50)}\\q"},"b":1}}`, // the same, past the short-string loop
    `{"object":{"spec":{"a":"\\u12"},"b":1}}`, // short \u escape
    `{"object":{"spec":{"a" "b"},"c":1}}`, // a string followed by a string
    `{"object":{"spec":{"a":x},"c":1}}`, // bare text (a lost quote)
    `{"object":{"spec":{"a":"é" é},"c":1}}`,
    `{"object":{"spec":{},}}`, // trailing comma after a removed member
    `{"object":{"a":1,,"spec":2}}`,
    `{"object":{"a" 1,"spec":2}}`, // missing colon
    `{"object":{"a":1 "spec":2}}`, // missing comma
    `{"object":{spec:2}}`, // unquoted key
    `{"object":{"spec":}}`, // missing value
    `{"object":{"spec":1:2}}`,
    `{"object":{"spec":${"[".repeat(MAX_DEPTH + 5)}${"]".repeat(MAX_DEPTH + 5)}}}`, // deeper than the stack
    ``,
    `   `,
  ];
  for (const text of bad) {
    test(JSON.stringify(text.length > 60 ? `${text.slice(0, 60)}…` : text), () => {
      const bytes = enc.encode(text);
      assert.equal(pruneJson(bytes, WATCH_PATHS), bytes);
    });
  }

  test("non-object documents are left alone", () => {
    for (const text of [`[{"object":{"spec":1}}]`, `"x"`, `12`, `null`]) {
      const bytes = enc.encode(text);
      assert.equal(pruneJson(bytes, WATCH_PATHS), bytes);
    }
  });
});

// ------------------------------------------------------------------ property test

const KEYS = ["object", "metadata", "managedFields", "spec", "status", "specs", "sp\"ec", "é", "a", "b", "name", "", "spec\\", "☕"];

function randomString(rnd: () => number): string {
  const parts = ["a", "spec", "\"", "\\", "\\\\\"", "/", "é", "☕", "😀", "\n", "\t", "\u0001", "{", "}", "[", "]", ",", ":", " ", "x".repeat(40)];
  let s = "";
  const n = Math.floor(rnd() * 6);
  for (let i = 0; i < n; i++) s += parts[Math.floor(rnd() * parts.length)];
  return s;
}

function randomValue(rnd: () => number, depth: number): unknown {
  const r = rnd();
  if (depth > 5 || r < 0.35) {
    const k = Math.floor(rnd() * 6);
    return k === 0 ? null : k === 1 ? rnd() < 0.5 : k === 2 ? Math.round((rnd() - 0.5) * 1e6) / 100 : k === 3 ? -0 : randomString(rnd);
  }
  if (r < 0.55) {
    const a: unknown[] = [];
    const n = Math.floor(rnd() * 4);
    for (let i = 0; i < n; i++) a.push(randomValue(rnd, depth + 1));
    return a;
  }
  return randomObject(rnd, depth + 1);
}

function randomObject(rnd: () => number, depth: number): Record<string, unknown> {
  const o: Record<string, unknown> = {};
  const n = Math.floor(rnd() * 5);
  for (let i = 0; i < n; i++) o[KEYS[Math.floor(rnd() * KEYS.length)]!] = randomValue(rnd, depth);
  return o;
}

/** JSON text with random whitespace between tokens and random escaping of keys. */
function serialize(v: unknown, rnd: () => number): string {
  const ws = () => (rnd() < 0.15 ? [" ", "\t", "\r\n", "  "][Math.floor(rnd() * 4)]! : "");
  if (v === null || typeof v !== "object") {
    if (typeof v === "string" && rnd() < 0.2) return escapeAll(v);
    return JSON.stringify(v);
  }
  if (Array.isArray(v)) return `[${ws()}${v.map((x) => `${ws()}${serialize(x, rnd)}${ws()}`).join(",")}${ws()}]`;
  const members = Object.entries(v).map(([k, x]) => {
    const key = rnd() < 0.2 ? escapeAll(k) : JSON.stringify(k);
    return `${ws()}${key}${ws()}:${ws()}${serialize(x, rnd)}${ws()}`;
  });
  return `{${ws()}${members.join(",")}${ws()}}`;
}

/** A JSON string literal with every character as a \u escape. */
function escapeAll(s: string): string {
  let out = "\"";
  for (let i = 0; i < s.length; i++) out += `\\u${s.charCodeAt(i).toString(16).padStart(4, "0")}`;
  return out + "\"";
}

describe("JsonPruner: property test", () => {
  const pathSets: PrunePaths[] = [
    WATCH_PATHS,
    [["metadata", "managedFields"], ["spec"]],
    [["object"]],
    [["a"], ["b", "a"], ["object", "é"], ["sp\"ec"], ["spec\\", "☕", "a"]],
  ];

  test("JSON.parse(prune(x)) equals JSON.parse(x) with the paths deleted, for 4,000 random documents", () => {
    const rnd = seededRandom(0x5eed);
    let removedSomething = 0;
    for (let i = 0; i < 4000; i++) {
      const doc: Record<string, unknown> = rnd() < 0.5
        ? { type: "MODIFIED", object: { ...randomObject(rnd, 2), metadata: randomObject(rnd, 2), spec: randomValue(rnd, 2), status: randomValue(rnd, 2) } }
        : randomObject(rnd, 0);
      const metadata = (doc.object as { metadata?: unknown } | undefined)?.metadata;
      if (rnd() < 0.3 && metadata && typeof metadata === "object" && !Array.isArray(metadata)) {
        (metadata as Record<string, unknown>).managedFields = randomValue(rnd, 3);
      }
      const text = serialize(doc, rnd);
      const paths = pathSets[i % pathSets.length]!;
      const bytes = enc.encode(text);
      const out = pruneJson(bytes, paths);
      if (out !== bytes) removedSomething++;
      let got: unknown;
      try {
        got = JSON.parse(dec.decode(out));
      } catch (err) {
        assert.fail(`document ${i}: pruned output does not parse (${(err as Error).message}):\n${text}\n→ ${dec.decode(out)}`);
      }
      assert.deepEqual(got, expected(JSON.parse(text), paths), `document ${i}:\n${text}\n→ ${dec.decode(out)}`);
    }
    assert.ok(removedSomething > 1000, `only ${removedSomething} documents had something removed`);
  });

  test("structural damage (truncation, a dropped quote or bracket) never turns an invalid document into a valid one", () => {
    const rnd = seededRandom(42);
    let checked = 0;
    for (let i = 0; i < 3000; i++) {
      const doc = { type: "MODIFIED", object: { metadata: { name: "n", managedFields: randomValue(rnd, 2) }, spec: randomValue(rnd, 1), status: randomValue(rnd, 2) } };
      const text = serialize(doc, rnd);
      const structural: number[] = [];
      for (let j = 0; j < text.length; j++) if ("\"{}[]".includes(text[j]!)) structural.push(j);
      const kind = i % 3;
      const at = structural[Math.floor(rnd() * structural.length)]!;
      const damaged = kind === 0 ? text.slice(0, Math.floor(rnd() * text.length)) : text.slice(0, at) + text.slice(at + 1);
      let originalValid = true;
      try {
        JSON.parse(damaged);
      } catch {
        originalValid = false;
      }
      if (originalValid) continue;
      checked++;
      const bytes = enc.encode(damaged);
      const out = pruneJson(bytes, WATCH_PATHS);
      assert.throws(() => JSON.parse(dec.decode(out)), SyntaxError, `damaged document ${i} became valid:\n${damaged}\n→ ${dec.decode(out)}`);
    }
    assert.ok(checked > 2000);
  });
});

/** An array of mostly objects (list items), now and then a scalar or a nested array, with list-ish keys. */
function randomItems(rnd: () => number, depth: number): unknown[] {
  const a: unknown[] = [];
  const n = depth > 5 ? 0 : Math.floor(rnd() * 6);
  for (let i = 0; i < n; i++) {
    const r = rnd();
    if (r < 0.1) a.push(randomValue(rnd, depth + 3));
    else if (r < 0.2) a.push(randomItems(rnd, depth + 1));
    else {
      const o: Record<string, unknown> = randomObject(rnd, depth + 2);
      if (rnd() < 0.7) o.metadata = { ...randomObject(rnd, depth + 2), ...(rnd() < 0.7 ? { managedFields: randomItems(rnd, depth + 2) } : {}) };
      if (rnd() < 0.7) o.spec = rnd() < 0.5 ? randomObject(rnd, depth + 2) : randomValue(rnd, depth + 2);
      if (rnd() < 0.3) o.items = randomItems(rnd, depth + 2);
      a.push(o);
    }
  }
  return a;
}

describe("JsonPruner: property test, list pages (array wildcard)", () => {
  const pathSets: PrunePaths[] = [
    LIST_PATHS,
    [["items", "*", "spec"]],
    [["items", "*"]],
    [["items", "*", "items", "*", "spec"], ["metadata"]],
    [["items", "*", "metadata"], ["items", "*", "metadata", "managedFields"], ["kind"]],
    [["*", "spec"], ["items", "*", "a"]],
  ];

  test("JSON.parse(prune(x)) equals JSON.parse(x) with the paths deleted (every element), for 4,000 random pages", () => {
    const rnd = seededRandom(0x11575);
    let removedSomething = 0;
    const p = pathSets.map((ps) => new JsonPruner(ps));
    for (let i = 0; i < 4000; i++) {
      const doc: unknown = rnd() < 0.1
        ? randomItems(rnd, 0)
        : { apiVersion: "v1", kind: "List", ...(rnd() < 0.3 ? randomObject(rnd, 3) : {}), items: rnd() < 0.9 ? randomItems(rnd, 0) : randomValue(rnd, 3), metadata: { resourceVersion: "1", continue: randomString(rnd) } };
      const text = serialize(doc, rnd);
      const k = i % pathSets.length;
      const bytes = enc.encode(text);
      const out = p[k]!.prune(bytes);
      if (out !== bytes) removedSomething++;
      let got: unknown;
      try {
        got = JSON.parse(dec.decode(out));
      } catch (err) {
        assert.fail(`page ${i}: pruned output does not parse (${(err as Error).message}):\n${text}\n→ ${dec.decode(out)}`);
      }
      assert.deepEqual(got, expected(JSON.parse(text), pathSets[k]!), `page ${i}:\n${text}\n→ ${dec.decode(out)}`);
      // In place: the same result.
      const buf = enc.encode(text);
      assert.equal(dec.decode(buf.subarray(0, p[k]!.pruneInPlace(buf))), dec.decode(out));
    }
    assert.ok(removedSomething > 1500, `only ${removedSomething} pages had something removed`);
  });

  test("structural damage to a page (truncation, a dropped quote or bracket) never turns an invalid page into a valid one", () => {
    const rnd = seededRandom(4242);
    const p = new JsonPruner(LIST_PATHS);
    const all = new JsonPruner([["items", "*"]]);
    let checked = 0;
    for (let i = 0; i < 3000; i++) {
      const doc = { kind: "List", items: randomItems(rnd, 0), metadata: { continue: "" } };
      const text = serialize(doc, rnd);
      const structural: number[] = [];
      for (let j = 0; j < text.length; j++) if ("\"{}[]".includes(text[j]!)) structural.push(j);
      const kind = i % 3;
      const at = structural[Math.floor(rnd() * structural.length)]!;
      const damaged = kind === 0 ? text.slice(0, Math.floor(rnd() * text.length)) : text.slice(0, at) + text.slice(at + 1);
      try {
        JSON.parse(damaged);
        continue; // still valid (rare)
      } catch {
        // expected
      }
      checked++;
      const bytes = enc.encode(damaged);
      for (const pr of [p, all]) {
        const out = pr.prune(bytes);
        assert.throws(() => JSON.parse(dec.decode(out)), SyntaxError, `damaged page ${i} became valid:\n${damaged}\n→ ${dec.decode(out)}`);
      }
    }
    assert.ok(checked > 2000, `only ${checked} damaged pages`);
  });
});

// ------------------------------------------------------------------ realistic data

describe("pruning realistic KService watch events", () => {
  const { lines } = generateEvents(300, { nonAsciiRate: 0.2 });

  test("bench events: exactly managedFields and spec are gone, the rest is identical", () => {
    for (const line of lines) {
      const pruned = JSON.parse(pruneText(line)) as { object: Record<string, unknown> & { metadata: Record<string, unknown> } };
      assert.deepEqual(pruned, expected(JSON.parse(line), WATCH_PATHS));
      assert.equal(pruned.object.spec, undefined);
      assert.equal(pruned.object.metadata.managedFields, undefined);
      assert.ok(pruned.object.status);
    }
  });

  test("the App converted from a pruned KService equals the App from the full one", () => {
    const objects: KubeObject[] = [];
    for (const line of lines) objects.push((JSON.parse(line) as { object: KubeObject }).object);
    const fixture = JSON.parse(readFileSync(new URL("./fixtures/flyte/ready-kservice.json", import.meta.url), "utf8")) as KubeObject;
    const event = JSON.parse(readFileSync(new URL("./fixtures/flyte/ready-update-event.json", import.meta.url), "utf8")) as { object?: KubeObject };
    objects.push(fixture);
    if (event.object) objects.push(event.object);
    // Variants of the real fixture: stopped, failing, without status.
    const stopped = structuredClone(fixture);
    stopped.metadata.labels = { ...stopped.metadata.labels, "flyte.org/app-stopped": "true" };
    objects.push(stopped);
    const noStatus = structuredClone(fixture);
    delete noStatus.status;
    objects.push(noStatus);
    let converted = 0;
    for (const obj of objects) {
      const full = enc.encode(JSON.stringify({ type: "MODIFIED", object: obj }));
      const prunedEvent = JSON.parse(dec.decode(pruneJson(full, WATCH_PATHS))) as { object: KubeObject };
      assert.equal(prunedEvent.object.spec, undefined);
      const convert = (o: KubeObject) => {
        try {
          return { app: kserviceToApp(o, DEFAULT_APPS_CONFIG, { currentReplicas: 2 }) };
        } catch (err) {
          return { error: (err as Error).message };
        }
      };
      const a = convert(obj);
      const b = convert(prunedEvent.object);
      assert.deepEqual(b, a);
      if ("app" in a) converted++;
    }
    assert.ok(converted >= 3, `only ${converted} objects converted to apps`);
  });

  test("a list page of bench KServices: exactly every item's managedFields and spec are gone, the rest is identical", () => {
    const items = lines.map((l) => (JSON.parse(l) as { object: KubeObject }).object);
    const text = JSON.stringify({ apiVersion: "serving.knative.dev/v1", kind: "ServiceList", metadata: { resourceVersion: "77", continue: "abc" }, items });
    const buf = enc.encode(text);
    const kept = new JsonPruner(listPathsOf(WATCH_PATHS)).pruneInPlace(buf);
    assert.ok(kept < buf.length * 0.7, `kept ${kept} of ${buf.length} bytes`);
    const page = JSON.parse(dec.decode(buf.subarray(0, kept))) as { items: KubeObject[] };
    assert.deepEqual(page, expected(JSON.parse(text), LIST_PATHS));
    assert.equal(page.items.length, items.length);
    for (const o of page.items) {
      assert.equal(o.spec, undefined);
      assert.equal(o.metadata.managedFields, undefined);
      assert.ok(o.status);
    }
  });

  test("ndjsonValues with prune: same events, minus the paths, across odd chunk boundaries", async () => {
    const body = enc.encode(lines.slice(0, 60).join("\r\n") + "\n\n");
    const chunks: Uint8Array[] = [];
    const rnd = seededRandom(7);
    for (let at = 0; at < body.length;) {
      const n = 1 + Math.floor(rnd() * 9000);
      chunks.push(body.slice(at, at + n));
      at += n;
    }
    let i = 0;
    const stream = new ReadableStream<Uint8Array>({
      pull(c) {
        if (i < chunks.length) c.enqueue(chunks[i++]!);
        else c.close();
      },
    });
    const got: unknown[] = [];
    for await (const v of ndjsonValues(stream, { prune: WATCH_PATHS })) got.push(v);
    assert.deepEqual(got, lines.slice(0, 60).map((l) => expected(JSON.parse(l), WATCH_PATHS)));
  });
});
