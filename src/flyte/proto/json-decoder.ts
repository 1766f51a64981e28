/**
 * A binary-protobuf → proto3-JSON decoder that skips the message objects: `fromBinaryToJson(desc, bytes)`
 * returns what `toJson(desc, fromBinary(desc, bytes))` of `@bufbuild/protobuf` v2 returns (same values,
 * same key order), for proto3 messages like `flyteidl2.app.Spec`, several times faster.
 *
 * Each `DescMessage` is compiled once into a plain field table. Decoding fills one slot array per
 * message (singular values last-wins, sub-messages merged, lists appended, maps keyed last-wins),
 * then writes the JSON object in field-number order, as protobuf-es does. The wire handling mirrors
 * protobuf-es's `BinaryReader` on purpose, malformed input included: a known field is read as its
 * declared type whatever the wire type says, a nested message may run past its declared length,
 * unknown fields (groups too) are skipped, recursion is capped at 100 messages. The output must be
 * identical, so where protobuf-es has a quirk, this copies it.
 *
 * Callers should still treat a throw as "ask protobuf-es": see `specFromAnnotation`.
 * @module
 */
import { Buffer } from "node:buffer";
import { type DescField, type DescMessage, ScalarType } from "@bufbuild/protobuf";

/** How a field is read and written; one per field of a compiled message. */
interface Field {
  no: number;
  key: string;
  /** Slot index (the field's position in field-number order). */
  slot: number;
  kind: "scalar" | "message" | "list" | "map";
  /** Singular scalar/enum, list item or map value: reads one value off the wire. */
  read: () => unknown;
  /** …and turns it into JSON. */
  json: (v: unknown) => unknown;
  /** Implicit presence (proto3 non-oneof scalar): is this the default, hence not printed? */
  isZero?: (v: unknown) => boolean;
  /** Message fields, message list items, message map values. */
  table?: Table;
  /**
   * A Struct field outside `Value`: protobuf-es keeps it as a plain JSON object between decode and
   * `toJson`, and that round trip turns a Value with no kind into `null` (instead of an error).
   */
  structAsJson?: boolean;
  /** Lists of numbers/enums: a length-delimited record is a packed run. */
  packable?: boolean;
  /** Map fields: key reader and the value used when an entry has none. */
  readKey?: () => string;
  keyZero?: string;
  missing?: () => unknown;
  /** Oneof members: the slots of the other members, cleared when this one is set. */
  siblings?: number[];
}

/** A compiled message: its fields by number and in JSON order, and a well-known-type writer. */
interface Table {
  name: string;
  byNo: (Field | undefined)[];
  fields: Field[];
  /** Set for the well-known types with their own JSON form (Timestamp, Duration, Struct, Value, ListValue). */
  wkt?: (slots: unknown[]) => unknown;
}

type Slots = unknown[];

const RECURSION_LIMIT = 100; // protobuf-es makeReadContext default
const TIMESTAMP_MS_MIN = Date.parse("0001-01-01T00:00:00Z");
const TIMESTAMP_MS_MAX = Date.parse("9999-12-31T23:59:59Z");
const DURATION_SECONDS_MAX = 315576000000;

// Decoder state: module-level because decoding is synchronous and not re-entrant; plain variables
// are what the engines optimize best (the hot loop is varint reads).
let buf: Uint8Array = new Uint8Array(0);
let view: DataView = new DataView(buf.buffer);
let pos = 0;
let len = 0;
let depth = 0;
let lo = 0;
let hi = 0;

// protobuf-es keeps a leading U+FEFF (ignoreBOM) and, for proto3 strings, rejects invalid UTF-8 (fatal).
const strictUtf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });
const looseUtf8 = new TextDecoder("utf-8", { ignoreBOM: true });
const int64View = new DataView(new ArrayBuffer(8));
// The whole input decoded once as latin1 (one char per byte), so an ASCII string field is a
// `substring`: much cheaper than building it char by char or a TextDecoder call per field.
// `node:buffer`'s latin1 is several times faster than TextDecoder("latin1") on Node, Deno and Bun.
let text = "";

function eof(): void {
  if (pos > len) throw new RangeError("premature EOF");
}

/** protobuf-es `varint32read`: up to 10 bytes, low 32 bits kept. */
function varint32(): number {
  let b = buf[pos++]!;
  if ((b & 0x80) === 0) {
    eof();
    return b;
  }
  let result = b & 0x7f;
  b = buf[pos++]!;
  result |= (b & 0x7f) << 7;
  if ((b & 0x80) === 0) {
    eof();
    return result;
  }
  b = buf[pos++]!;
  result |= (b & 0x7f) << 14;
  if ((b & 0x80) === 0) {
    eof();
    return result;
  }
  b = buf[pos++]!;
  result |= (b & 0x7f) << 21;
  if ((b & 0x80) === 0) {
    eof();
    return result;
  }
  b = buf[pos++]!;
  result |= (b & 0x0f) << 28;
  for (let n = 5; (b & 0x80) !== 0 && n < 10; n++) b = buf[pos++]!;
  if ((b & 0x80) !== 0) throw new Error("invalid varint");
  eof();
  return result >>> 0;
}

/** protobuf-es `varint64read`: sets `lo`/`hi`. */
function varint64(): void {
  let l = 0;
  let h = 0;
  for (let shift = 0; shift < 28; shift += 7) {
    const b = buf[pos++]!;
    l |= (b & 0x7f) << shift;
    if ((b & 0x80) === 0) {
      eof();
      lo = l;
      hi = h;
      return;
    }
  }
  const middle = buf[pos++]!;
  l |= (middle & 0x0f) << 28;
  h = (middle & 0x70) >> 4;
  if ((middle & 0x80) === 0) {
    eof();
    lo = l;
    hi = h;
    return;
  }
  for (let shift = 3; shift <= 31; shift += 7) {
    const b = buf[pos++]!;
    h |= (b & 0x7f) << shift;
    if ((b & 0x80) === 0) {
      eof();
      lo = l;
      hi = h;
      return;
    }
  }
  throw new Error("invalid varint");
}

function int64(): bigint {
  varint64();
  int64View.setInt32(0, lo, true);
  int64View.setInt32(4, hi, true);
  return int64View.getBigInt64(0, true);
}

function uint64(): bigint {
  varint64();
  int64View.setInt32(0, lo, true);
  int64View.setInt32(4, hi, true);
  return int64View.getBigUint64(0, true);
}

/** protobuf-es `BinaryReader.tag()`: rejects overlong tags, field number 0 and wire types 6/7. */
function tag(): number {
  const start = pos;
  const t = varint32();
  const n = pos - start;
  if (n > 5 || (n === 5 && buf[pos - 1]! > 0x0f)) throw new Error("illegal tag: varint overflows uint32");
  if (t >>> 3 <= 0 || (t & 7) > 5) throw new Error(`illegal tag: field no ${t >>> 3} wire type ${t & 7}`);
  return t;
}

/** protobuf-es `BinaryReader.skip()`: one unknown field; groups must end with their own number. */
function skip(wireType: number, no: number, limit: number): void {
  switch (wireType) {
    case 0:
      while (buf[pos++]! & 0x80) { /* varint */ }
      break;
    case 1:
      pos += 8;
      break;
    case 5:
      pos += 4;
      break;
    case 2: {
      const n = varint32();
      pos += n;
      break;
    }
    case 3:
      if (limit <= 0) throw new Error("maximum recursion depth reached");
      for (;;) {
        const t = tag();
        if ((t & 7) === 4) {
          if (t >>> 3 !== no) throw new Error("invalid end group tag");
          break;
        }
        skip(t & 7, t >>> 3, limit - 1);
      }
      break;
    default:
      throw new Error(`cant skip wire type ${wireType}`);
  }
  eof();
}

function string(strict: boolean): string {
  const n = varint32();
  const start = pos;
  pos += n;
  eof();
  let i = start;
  while (i < pos && buf[i]! < 0x80) i++;
  if (i === pos) return text.substring(start, pos);
  return (strict ? strictUtf8 : looseUtf8).decode(buf.subarray(start, pos));
}

function bytes(): Uint8Array {
  const n = varint32();
  const start = pos;
  pos += n;
  eof();
  return buf.subarray(start, pos);
}

function bool(): boolean {
  const b = buf[pos]!;
  if (b < 0x80) {
    pos++;
    return b !== 0;
  }
  varint64();
  return lo !== 0 || hi !== 0;
}

// DataView reads throw RangeError past the end, like protobuf-es's.
const double = (): number => view.getFloat64((pos += 8) - 8, true);
const float = (): number => view.getFloat32((pos += 4) - 4, true);
const fixed32 = (): number => view.getUint32((pos += 4) - 4, true);
const sfixed32 = (): number => view.getInt32((pos += 4) - 4, true);
function fixed64(signed: boolean): bigint {
  int64View.setInt32(0, sfixed32(), true);
  int64View.setInt32(4, sfixed32(), true);
  return signed ? int64View.getBigInt64(0, true) : int64View.getBigUint64(0, true);
}

/** Reader, JSON writer and default test for a scalar type (protobuf-es `compileScalarReader`/`compileScalarValue`). */
function scalar(type: ScalarType, strict: boolean): Pick<Field, "read" | "json" | "isZero"> {
  const same = (v: unknown) => v;
  const str = (v: unknown) => String(v);
  const zeroNum = (v: unknown) => v === 0;
  const zeroLong = (v: unknown) => v === 0n;
  switch (type) {
    case ScalarType.STRING:
      return { read: () => string(strict), json: same, isZero: (v) => v === "" };
    case ScalarType.BOOL:
      return { read: bool, json: same, isZero: (v) => v === false };
    case ScalarType.INT32:
      return { read: () => varint32() | 0, json: same, isZero: zeroNum };
    case ScalarType.UINT32:
      return { read: varint32, json: same, isZero: zeroNum };
    case ScalarType.SINT32:
      return { read: () => { const z = varint32(); return (z >>> 1) ^ -(z & 1); }, json: same, isZero: zeroNum };
    case ScalarType.FIXED32:
      return { read: fixed32, json: same, isZero: zeroNum };
    case ScalarType.SFIXED32:
      return { read: sfixed32, json: same, isZero: zeroNum };
    case ScalarType.INT64:
      return { read: int64, json: str, isZero: zeroLong };
    case ScalarType.UINT64:
      return { read: uint64, json: str, isZero: zeroLong };
    case ScalarType.FIXED64:
      return { read: () => fixed64(false), json: str, isZero: zeroLong };
    case ScalarType.SFIXED64:
      return { read: () => fixed64(true), json: str, isZero: zeroLong };
    case ScalarType.SINT64:
      return {
        read: () => {
          varint64();
          const s = -(lo & 1);
          int64View.setInt32(0, ((lo >>> 1) | ((hi & 1) << 31)) ^ s, true);
          int64View.setInt32(4, (hi >>> 1) ^ s, true);
          return int64View.getBigInt64(0, true);
        },
        json: str,
        isZero: zeroLong,
      };
    case ScalarType.DOUBLE:
    case ScalarType.FLOAT:
      return {
        read: type === ScalarType.DOUBLE ? double : float,
        json: (v) => Number.isNaN(v) ? "NaN" : v === Infinity ? "Infinity" : v === -Infinity ? "-Infinity" : v,
        isZero: (v) => Object.is(v, 0), // -0 is printed
      };
    case ScalarType.BYTES:
      return {
        read: bytes,
        json: (v) => {
          const b = v as Uint8Array;
          let bin = "";
          for (let i = 0; i < b.length; i++) bin += String.fromCharCode(b[i]!);
          return btoa(bin);
        },
        isZero: (v) => (v as Uint8Array).length === 0,
      };
  }
}

/** Enum: read as int32 (proto3 enums are open); printed by name, unknown numbers as the number. */
function enumType(field: DescField & { enum: NonNullable<DescField["enum"]> }): Pick<Field, "read" | "json" | "isZero"> {
  if (!field.enum.open) throw new Error(`closed enum ${field.enum.typeName} not supported`);
  if (field.enum.typeName === "google.protobuf.NullValue") {
    return { read: () => varint32() | 0, json: () => null, isZero: (v) => v === field.enum.values[0]!.number };
  }
  const names = new Map<number, string>(field.enum.values.map((v) => [v.number, v.jsonName]));
  const zero = field.enum.values[0]!.number;
  return { read: () => varint32() | 0, json: (v) => names.get(v as number) ?? v, isZero: (v) => v === zero };
}

/** Object property, `__proto__` included (protobuf-es `setOwn`). */
function setOwn(obj: Record<string, unknown>, key: string, value: unknown): void {
  if (key === "__proto__") Object.defineProperty(obj, key, { value, writable: true, enumerable: true, configurable: true });
  else obj[key] = value;
}

let tables = new WeakMap<DescMessage, Table>();

/** The compiled table of a message (compiled on first use; recursive types resolve to the same table). */
function compile(desc: DescMessage): Table {
  let t = tables.get(desc);
  if (t) return t;
  t = { name: desc.typeName, byNo: [], fields: [] };
  tables.set(desc, t);
  const sorted = desc.fields.concat().sort((a, b) => a.number - b.number);
  const table = t;
  const fields = sorted.map((f, slot): Field => {
    if ((f as { delimitedEncoding?: boolean }).delimitedEncoding) throw new Error(`${f} uses group encoding; not supported`);
    if (f.jsonName === "__proto__") throw new Error(`${f} is named __proto__; not supported`);
    const base = { no: f.number, key: f.jsonName, slot };
    switch (f.fieldKind) {
      case "scalar":
        return field({ ...base, kind: "scalar", ...scalar(f.scalar, f.utf8Validation) });
      case "enum":
        return field({ ...base, kind: "scalar", ...enumType(f) });
      case "message":
        return field({ ...base, kind: "message", table: compile(f.message) });
      case "list": {
        if (f.listKind === "message") return field({ ...base, kind: "list", table: compile(f.message) });
        const item = f.listKind === "enum" ? enumType(f) : scalar(f.scalar, f.utf8Validation);
        const packable = f.listKind === "enum" || (f.scalar !== ScalarType.STRING && f.scalar !== ScalarType.BYTES);
        return field({ ...base, kind: "list", ...item, packable });
      }
      case "map": {
        const keyType = scalar(f.mapKey, f.utf8Validation);
        // Map keys are object keys: protobuf-es stringifies them (`String(true)`, `String(5n)`).
        const readKey = () => String(keyType.read());
        const keyZero = String(f.mapKey === ScalarType.BOOL ? false : f.mapKey === ScalarType.STRING ? "" : 0);
        const map = { ...base, kind: "map" as const, readKey, keyZero };
        if (f.mapKind === "message") return field({ ...map, table: compile(f.message), missing: () => [] });
        const value = f.mapKind === "enum" ? enumType(f) : scalar(f.scalar, f.utf8Validation);
        const zero = f.mapKind === "enum" ? f.enum.values[0]!.number
          : f.scalar === ScalarType.BYTES ? new Uint8Array(0)
          : f.scalar === ScalarType.STRING ? "" : f.scalar === ScalarType.BOOL ? false
          : f.scalar === ScalarType.INT64 || f.scalar === ScalarType.UINT64 || f.scalar === ScalarType.SINT64 ||
              f.scalar === ScalarType.FIXED64 || f.scalar === ScalarType.SFIXED64 ? 0n : 0;
        return field({ ...map, ...value, missing: () => zero });
      }
    }
  });
  for (const f of fields) {
    const d = sorted[f.slot]!;
    f.structAsJson = d.message?.typeName === "google.protobuf.Struct" && desc.typeName !== "google.protobuf.Value";
    if (d.oneof) f.siblings = d.oneof.fields.filter((o) => o !== d).map((o) => sorted.indexOf(o));
    // Implicit presence only for proto3 scalars outside a oneof; everything else prints when set.
    if (f.kind !== "scalar" || d.oneof || d.presence !== 2 /* IMPLICIT */) f.isZero = undefined;
    table.byNo[f.no] = f;
  }
  table.fields = fields;
  table.wkt = wkt(desc.typeName, table);
  return table;
}

function noRead(): never {
  throw new Error("unreachable");
}

/** Every Field with the same properties in the same order: one hidden class, so the hot loops stay monomorphic. */
function field(p: Partial<Field> & Pick<Field, "no" | "key" | "slot" | "kind">): Field {
  return {
    no: p.no,
    key: p.key,
    slot: p.slot,
    kind: p.kind,
    read: p.read ?? noRead,
    json: p.json ?? noRead,
    isZero: p.isZero,
    table: p.table,
    structAsJson: false,
    packable: p.packable ?? false,
    readKey: p.readKey,
    keyZero: p.keyZero,
    missing: p.missing,
    siblings: undefined,
  };
}

/** JSON of the well-known types with a custom representation (protobuf-es `to-json.ts`). */
function wkt(typeName: string, t: Table): Table["wkt"] {
  if (!typeName.startsWith("google.protobuf.")) return undefined;
  switch (typeName) {
    case "google.protobuf.Timestamp":
      return (s) => {
        const seconds = (s[0] ?? 0n) as bigint;
        const nanos = (s[1] ?? 0) as number;
        const ms = Number(seconds) * 1000;
        if (ms < TIMESTAMP_MS_MIN || ms > TIMESTAMP_MS_MAX) throw new Error("Timestamp out of range");
        if (nanos < 0 || nanos > 999999999) throw new Error("Timestamp nanos out of range");
        let z = "Z";
        if (nanos > 0) {
          const n = (nanos + 1000000000).toString().substring(1);
          z = n.substring(3) === "000000" ? `.${n.substring(0, 3)}Z` : n.substring(6) === "000" ? `.${n.substring(0, 6)}Z` : `.${n}Z`;
        }
        return new Date(ms).toISOString().replace(".000Z", z);
      };
    case "google.protobuf.Duration":
      return (s) => {
        const seconds = (s[0] ?? 0n) as bigint;
        const nanos = (s[1] ?? 0) as number;
        const n = Number(seconds);
        if (n > DURATION_SECONDS_MAX || n < -DURATION_SECONDS_MAX) throw new Error("Duration out of range");
        if ((n > 0 && nanos < 0) || (n < 0 && nanos > 0)) throw new Error("Duration nanos sign must match seconds sign");
        let text = seconds.toString();
        if (nanos !== 0) {
          let ns = Math.abs(nanos).toString();
          ns = "0".repeat(9 - ns.length) + ns;
          if (ns.substring(3) === "000000") ns = ns.substring(0, 3);
          else if (ns.substring(6) === "000") ns = ns.substring(0, 6);
          text += "." + ns;
          if (nanos < 0 && n == 0) text = "-" + text;
        }
        return text + "s";
      };
    case "google.protobuf.Struct":
      return (s) => structJson(s, t, false);
    case "google.protobuf.Value":
      return (s) => valueJson(s, t, false);
    case "google.protobuf.ListValue":
      return (s) => listJson(s, t, false);
    default:
      throw new Error(`${typeName} not supported`);
  }
}

// Struct, Value, ListValue; `kindless` is what a Value without a kind becomes: `null` under a
// Struct field (see `Field.structAsJson`), an error otherwise (protobuf-es `valueToJson`).
function structJson(s: Slots, t: Table, kindless: boolean): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  const map = s[0] as Map<string, Slots> | undefined;
  if (map) for (const [k, v] of map) setOwn(out, k, valueJson(v, t.fields[0]!.table!, kindless));
  return out;
}

function listJson(s: Slots, t: Table, kindless: boolean): unknown[] {
  return ((s[0] ?? []) as Slots[]).map((v) => valueJson(v, t.fields[0]!.table!, kindless));
}

/** google.protobuf.Value: fields 1–6 are the `kind` oneof (null, number, string, bool, struct, list). */
function valueJson(s: Slots, t: Table, kindless: boolean): unknown {
  for (let i = 0; i < 6; i++) {
    const v = s[i];
    if (v === undefined) continue;
    if (i === 0) return null;
    if (i === 1 && !Number.isFinite(v)) throw new Error("google.protobuf.Value cannot be NaN or Infinity");
    if (i === 4) return structJson(v as Slots, t.fields[4]!.table!, kindless);
    if (i === 5) return listJson(v as Slots, t.fields[5]!.table!, kindless);
    return v;
  }
  if (kindless) return null;
  throw new Error("google.protobuf.Value must have a value");
}

/** JSON of a message-typed value of field `f`. */
function messageJson(f: Field, s: Slots): unknown {
  return f.structAsJson ? structJson(s, f.table!, true) : json(f.table!, s);
}

/** Reads one message body into `s` (merging), like protobuf-es `compileMessageReader`. */
function readMessage(t: Table, s: Slots, end: number): void {
  if (++depth > RECURSION_LIMIT) throw new Error(`cannot decode ${t.name} from binary: maximum recursion depth`);
  while (pos < end) {
    const tg = tag();
    const f = t.byNo[tg >>> 3];
    if (f === undefined) skip(tg & 7, tg >>> 3, RECURSION_LIMIT - depth);
    else readField(f, s, tg & 7);
  }
  depth--;
}

function readField(f: Field, s: Slots, wireType: number): void {
  if (f.siblings) {
    // Setting a oneof member clears the others; a message member only merges into itself.
    for (const o of f.siblings) s[o] = undefined;
  }
  switch (f.kind) {
    case "scalar":
      s[f.slot] = f.read();
      return;
    case "message": {
      const child = (s[f.slot] ?? []) as Slots;
      readMessage(f.table!, child, varint32() + pos);
      s[f.slot] = child;
      return;
    }
    case "list": {
      const items = (s[f.slot] ??= []) as unknown[];
      if (f.table) {
        const child: Slots = [];
        readMessage(f.table, child, varint32() + pos);
        items.push(child);
      } else if (wireType === 2 && f.packable) {
        const end = varint32() + pos;
        while (pos < end) items.push(f.read());
      } else {
        items.push(f.read());
      }
      return;
    }
    case "map": {
      const map = (s[f.slot] ??= new Map()) as Map<string, unknown>;
      const n = varint32();
      const end = pos + n;
      let key: string | undefined;
      let val: unknown;
      while (pos < end) {
        const tg = tag();
        const no = tg >>> 3;
        if (no === 1) key = f.readKey!();
        else if (no === 2) {
          if (f.table) {
            const child = (val ?? []) as Slots; // a repeated value merges within its entry
            readMessage(f.table, child, varint32() + pos);
            val = child;
          } else val = f.read();
        } else skip(tg & 7, no, RECURSION_LIMIT - depth);
      }
      map.set(key ?? f.keyZero!, val === undefined ? f.missing!() : val);
      return;
    }
  }
}

/** A decoded message's slots → its proto3 JSON. */
function json(t: Table, s: Slots): unknown {
  if (t.wkt) return t.wkt(s);
  const out: Record<string, unknown> = {};
  for (const f of t.fields) {
    const v = s[f.slot];
    if (v === undefined) continue;
    switch (f.kind) {
      case "scalar":
        if (!f.isZero?.(v)) out[f.key] = f.json(v);
        break;
      case "message":
        out[f.key] = messageJson(f, v as Slots);
        break;
      case "list": {
        const items = v as unknown[];
        if (items.length === 0) break;
        out[f.key] = f.table ? items.map((i) => messageJson(f, i as Slots)) : items.map(f.json);
        break;
      }
      case "map": {
        const obj: Record<string, unknown> = {};
        for (const [k, val] of v as Map<string, unknown>) setOwn(obj, k, f.table ? messageJson(f, val as Slots) : f.json(val));
        out[f.key] = obj;
        break;
      }
    }
  }
  return out;
}

/**
 * Binary protobuf → proto3 JSON, equal to `toJson(desc, fromBinary(desc, data))` of `@bufbuild/protobuf`
 * (default options). Throws on malformed input, and on anything protobuf-es's `toJson` rejects.
 * Also throws, at first use of a message type, if its closure uses something this decoder does not
 * handle (closed enums, groups, Any, wrappers, FieldMask): callers fall back to protobuf-es then.
 */
export function fromBinaryToJson(desc: DescMessage, data: Uint8Array): unknown {
  let t: Table;
  try {
    t = compile(desc);
  } catch (err) {
    tables = new WeakMap(); // drop half-compiled tables: the next call fails the same way
    throw err;
  }
  buf = data;
  view = new DataView(data.buffer, data.byteOffset, data.byteLength);
  pos = 0;
  len = data.length;
  depth = 0;
  text = Buffer.from(data.buffer, data.byteOffset, data.byteLength).toString("latin1");
  try {
    const s: Slots = [];
    readMessage(t, s, len);
    return json(t, s);
  } finally {
    buf = new Uint8Array(0); // do not keep the caller's bytes alive
    text = "";
  }
}
