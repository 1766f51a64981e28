/**
 * The compiled message tables of `createProtoJsonDecoder` (json-decoder.ts) and their proto3 JSON printing, Go
 * `protojson`'s rules (field order, sorted map keys, the well-known types' own forms and errors).
 * Pure: the wire reading, which owns a cursor, is in `json-decoder.ts`.
 * @module
 */
/** How a field is read and written; one per field of a compiled message. */
export interface Field {
  no: number;
  key: string;
  /** Slot index (the field's position in field-number order). */
  slot: number;
  kind: "scalar" | "message" | "list" | "map";
  /** The wire type of one value (of an item for lists, of the entry for maps); any other is an unknown field. */
  wire: number;
  /** Singular scalar/enum, list item or map value: reads one value off the wire. */
  read: () => unknown;
  /** …and turns it into JSON. */
  json: (v: unknown) => unknown;
  /** Implicit presence (proto3 non-oneof scalar): is this the default, hence not printed? */
  isZero?: (v: unknown) => boolean;
  /** Message fields, message list items, message map values. */
  table?: Table;
  /** Lists of numbers/enums: a length-delimited record is a packed run. */
  packable?: boolean;
  /** Map fields: key reader (and its wire type), key order, and the value used when an entry has none. */
  readKey?: () => string;
  keyWire?: number;
  valueWire?: number;
  keyOrder?: (a: string, b: string) => number;
  keyZero?: string;
  missing?: () => unknown;
  /** Oneof members: the slots of the other members, cleared when this one is set. */
  siblings?: number[];
}

/** A compiled message: its fields by number and in JSON order, and a well-known-type writer. */
export interface Table {
  name: string;
  byNo: (Field | undefined)[];
  fields: Field[];
  /** Set for the well-known types with their own JSON form (Timestamp, Duration, Struct, Value, ListValue). */
  wkt?: (slots: unknown[]) => unknown;
}

export type Slots = unknown[];

const TIMESTAMP_MS_MIN = Date.parse("0001-01-01T00:00:00Z");
const TIMESTAMP_MS_MAX = Date.parse("9999-12-31T23:59:59Z");
const DURATION_SECONDS_MAX = 315576000000;

/** Object property, `__proto__` included (protobuf-es `setOwn`). */
function setOwn(obj: Record<string, unknown>, key: string, value: unknown): void {
  if (key === "__proto__") Object.defineProperty(obj, key, { value, writable: true, enumerable: true, configurable: true });
  else obj[key] = value;
}

function noRead(): never {
  throw new Error("unreachable");
}

/** Every Field with the same properties in the same order: one hidden class, so the hot loops stay monomorphic. */
export function field(p: Partial<Field> & Pick<Field, "no" | "key" | "slot" | "kind" | "wire">): Field {
  return {
    no: p.no,
    key: p.key,
    slot: p.slot,
    kind: p.kind,
    wire: p.wire,
    read: p.read ?? noRead,
    json: p.json ?? noRead,
    isZero: p.isZero,
    table: p.table,
    packable: p.packable ?? false,
    readKey: p.readKey,
    keyWire: p.keyWire,
    valueWire: p.valueWire,
    keyOrder: p.keyOrder,
    keyZero: p.keyZero,
    missing: p.missing,
    siblings: undefined,
  };
}

/** JSON of the well-known types with a custom representation (Go `protojson`'s, errors included). */
export function wkt(typeName: string, t: Table): Table["wkt"] {
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
        if (nanos <= -1e9 || nanos >= 1e9) throw new Error("Duration nanos out of range");
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
      return (s) => structJson(s, t);
    case "google.protobuf.Value":
      return (s) => valueJson(s, t);
    case "google.protobuf.ListValue":
      return (s) => listJson(s, t);
    default:
      throw new Error(`${typeName} not supported`);
  }
}

/** A map's entries as a JSON object, keys in Go's order (protojson sorts them). */
function mapJson(f: Field, map: Map<string, unknown>, value: (v: unknown) => unknown): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  const keys = [...map.keys()];
  if (keys.length > 1) keys.sort(f.keyOrder);
  for (const k of keys) setOwn(out, k, value(map.get(k)));
  return out;
}

// Struct, Value, ListValue: a Value with no kind, NaN or ±Infinity cannot be printed (protojson errors).
function structJson(s: Slots, t: Table): Record<string, unknown> {
  const map = s[0] as Map<string, Slots> | undefined;
  const fields = t.fields[0]!;
  return map ? mapJson(fields, map, (v) => valueJson(v as Slots, fields.table!)) : {};
}

function listJson(s: Slots, t: Table): unknown[] {
  return ((s[0] ?? []) as Slots[]).map((v) => valueJson(v, t.fields[0]!.table!));
}

/** google.protobuf.Value: fields 1–6 are the `kind` oneof (null, number, string, bool, struct, list). */
function valueJson(s: Slots, t: Table): unknown {
  for (let i = 0; i < 6; i++) {
    const v = s[i];
    if (v === undefined) continue;
    if (i === 0) return null;
    if (i === 1 && !Number.isFinite(v)) throw new Error(`google.protobuf.Value: invalid ${v} value`);
    if (i === 4) return structJson(v as Slots, t.fields[4]!.table!);
    if (i === 5) return listJson(v as Slots, t.fields[5]!.table!);
    return v;
  }
  throw new Error("google.protobuf.Value: none of the oneof fields is set");
}

/** A decoded message's slots → its proto3 JSON (Go `protojson`: fields in number order, defaults omitted). */
export function json(t: Table, s: Slots): unknown {
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
        out[f.key] = json(f.table!, v as Slots);
        break;
      case "list": {
        const items = v as unknown[];
        if (items.length === 0) break;
        out[f.key] = f.table ? items.map((i) => json(f.table!, i as Slots)) : items.map(f.json);
        break;
      }
      case "map": {
        const map = v as Map<string, unknown>;
        if (map.size === 0) break;
        out[f.key] = mapJson(f, map, f.table ? (val) => json(f.table!, val as Slots) : f.json);
        break;
      }
    }
  }
  return out;
}
