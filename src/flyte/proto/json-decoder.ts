/**
 * A binary-protobuf → proto3-JSON decoder with Go's semantics: `fromBinaryToJson(desc, bytes)` returns
 * what Flyte's Go code gets from `proto.Unmarshal` (protobuf-go) followed by `protojson.Marshal` (same
 * values; message keys in field order, map and Struct keys sorted), for proto3 messages like
 * `flyteidl2.app.Spec`, straight from the bytes (no message objects).
 *
 * Each `DescMessage` is compiled once into a plain field table. Decoding fills one slot array per
 * message (singular values last-wins, sub-messages merged, lists appended, maps keyed last-wins),
 * then writes the JSON object. The wire rules are protobuf-go's (`internal/impl/decode.go`,
 * `encoding/protowire`), malformed input included, and differ from protobuf-es's in ways that change
 * the result, which is why this is the only decoder of the annotation:
 * - a known field whose wire type does not match its declared type is an unknown field (skipped),
 *   and the rest of the message decodes (protobuf-es reads it as the declared type);
 * - every length (sub-message, string, packed run, map entry, unknown field) must fit inside its
 *   enclosing message, or the whole input is rejected (protobuf-es checks only the buffer's end);
 * - tags are varints of up to 10 bytes with field numbers 1..2^29-1, the 10th byte of a varint must
 *   be 0 or 1, proto3 strings must be valid UTF-8, nesting is capped at 10,000 (protobuf-go's
 *   default recursion limit);
 * - what `protojson` cannot print fails the decode: a Timestamp or Duration out of range, a
 *   `google.protobuf.Value` with no kind, NaN or ±Infinity.
 * tests/spec-decoder.test.ts checks it against vectors produced by protobuf-go itself
 * (tests/oracle/protogo) and against Flyte's own answers (tests/flyte-golden.test.ts).
 * @module
 */
import { type DescField, type DescMessage, ScalarType } from "@bufbuild/protobuf";
import { type Field, field, json, type Slots, type Table, wkt } from "./json-print.ts";


const RECURSION_LIMIT = 10_000; // protobuf-go's protowire.DefaultRecursionLimit

/**
 * Go's string order (bytes of UTF-8, i.e. code points), which protojson sorts map keys by. UTF-16
 * code units order the same except surrogates (U+10000 and up), which must sort after U+E000–U+FFFF.
 */
export function codePointOrder(a: string, b: string): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    let x = a.charCodeAt(i);
    let y = b.charCodeAt(i);
    if (x === y) continue;
    if (x >= 0xd800) x = x < 0xe000 ? x + 0x2000 : x - 0x800;
    if (y >= 0xd800) y = y < 0xe000 ? y + 0x2000 : y - 0x800;
    return x - y;
  }
  return a.length - b.length;
}
const numericOrder = (a: string, b: string): number => (BigInt(a) < BigInt(b) ? -1 : BigInt(a) > BigInt(b) ? 1 : 0);
const boolOrder = (a: string, b: string): number => (a === b ? 0 : a === "false" ? -1 : 1);


/** Decodes one message: binary protobuf in, proto3 JSON out (see {@link createProtoJsonDecoder}). */
export type ProtoJsonDecoder = (desc: DescMessage, data: Uint8Array) => unknown;

/**
 * A decoder with its own cursor, scratch buffers and compiled tables. Its user owns it (one per
 * converter): the hot loop reads closure variables, which the engines optimize as well as module
 * variables, and nothing is shared between users. Not re-entrant (decoding is synchronous).
 *
 * @example
 * ```ts
 * import { createProtoJsonDecoder } from "./json-decoder.ts";
 * import { SpecSchema } from "./spec_pb.ts";
 * const decode = createProtoJsonDecoder();
 * decode(SpecSchema, new Uint8Array(0)); // {} (an empty Spec)
 * ```
 */
export function createProtoJsonDecoder(): ProtoJsonDecoder {
  // Decoder state: closure variables of this decoder (decoding is synchronous and not re-entrant);
  // plain variables are what the engines optimize best (the hot loop is varint reads). `len` is the end of the
  // innermost length-delimited record being read: nothing may be read past it.
  let buf: Uint8Array = new Uint8Array(0);
  let view: DataView = new DataView(buf.buffer);
  let pos = 0;
  let len = 0;
  let depth = 0;
  let lo = 0;
  let hi = 0;

  // Go keeps a leading U+FEFF (ignoreBOM) and, for proto3 strings, rejects invalid UTF-8 (fatal:
  // surrogates, overlong forms and code points past U+10FFFF, as Go's utf8.Valid).
  const strictUtf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });
  const looseUtf8 = new TextDecoder("utf-8", { ignoreBOM: true });
  const int64View = new DataView(new ArrayBuffer(8));
  // The whole input as a string of one char per byte, so an ASCII string field is a `substring`:
  // much cheaper than building it char by char or a TextDecoder call per field (measured: 2× slower).
  // Only ASCII runs are ever read from it, so the other bytes need not survive: each byte is masked to
  // 7 bits (4 at a time) and the result decoded as UTF-8, the fastest TextDecoder path on every
  // runtime. TextDecoder("latin1") is windows-1252 through ICU on Node (~30× slower with high bytes);
  // `node:buffer`'s latin1 is not on workerd. The scratch words are reused up to 64 KiB.
  let text = "";
  let scratch = new Uint32Array(1024);
  const SCRATCH_MAX_WORDS = 16 * 1024;

  /** `data` with every byte's high bit cleared, as a string (one char per byte). */
  function asciiText(data: Uint8Array): string {
    const words = (data.length + 3) >>> 2;
    let m = scratch;
    if (m.length < words) {
      m = new Uint32Array(Math.max(words, m.length * 2));
      if (m.length <= SCRATCH_MAX_WORDS) scratch = m;
    }
    const bytes = new Uint8Array(m.buffer, 0, data.length);
    bytes.set(data);
    for (let i = 0; i < words; i++) m[i] = m[i]! & 0x7f7f7f7f;
    return looseUtf8.decode(bytes);
  }

  function eof(): void {
    if (pos > len) throw new RangeError("unexpected EOF");
  }

  /** protowire `ConsumeVarint` truncated to its low 32 bits: up to 10 bytes, the 10th 0 or 1. */
  function varint32(): number {
    const start = pos;
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
    eof();
    if ((b & 0x80) !== 0 || (pos - start === 10 && b > 1)) throw new Error("variable length integer overflow");
    return result >>> 0;
  }

  /** protowire `ConsumeVarint`: sets `lo`/`hi`. */
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
        if (shift === 31 && b > 1) break; // the 10th byte carries bit 63 only
        lo = l;
        hi = h;
        return;
      }
    }
    eof();
    throw new Error("variable length integer overflow");
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

  /**
   * protowire `ConsumeTag`: a varint of up to 10 bytes whose field number is 1..2^29-1; returned as
   * `number << 3 | wireType` (wire types 6 and 7 are rejected where they are used, as in Go).
   */
  function tag(): number {
    const b = buf[pos]!;
    if (b < 0x80 && pos < len) {
      pos++;
      if (b >>> 3 === 0) throw new Error("invalid field number");
      return b;
    }
    varint64();
    if (hi !== 0 || lo >>> 3 === 0) throw new Error("invalid field number");
    return lo >>> 0;
  }

  /** A length prefix; the bytes it announces must fit inside the enclosing record. Returns their end. */
  function lengthEnd(): number {
    const n = varint32();
    const end = pos + n;
    if (end > len || n > 0x7fffffff) throw new RangeError("unexpected EOF");
    return end;
  }

  /** protowire `ConsumeFieldValue`: one unknown field; groups must end with their own number. */
  function skip(wireType: number, no: number, limit: number): void {
    switch (wireType) {
      case 0:
        varint64();
        return;
      case 1:
        pos += 8;
        break;
      case 5:
        pos += 4;
        break;
      case 2:
        pos = lengthEnd();
        return;
      case 3: {
        // iterative: a group may nest `limit + 1` deep (protowire counts from the first one)
        const open = [no];
        while (open.length > 0) {
          if (pos >= len) throw new RangeError("unexpected EOF");
          const t = tag();
          const w = t & 7;
          if (w === 4) {
            if (t >>> 3 !== open[open.length - 1]) throw new Error("mismatching end group marker");
            open.pop();
          } else if (w === 3) {
            if (open.length > limit) throw new Error("exceeded maximum recursion depth");
            open.push(t >>> 3);
          } else skip(w, t >>> 3, limit);
        }
        return;
      }
      case 4:
        throw new Error("unexpected end group marker");
      default:
        throw new Error(`reserved wire type ${wireType}`);
    }
    eof();
  }

  function string(strict: boolean): string {
    const end = lengthEnd();
    const start = pos;
    pos = end;
    let i = start;
    while (i < pos && buf[i]! < 0x80) i++;
    if (i === pos) return text.substring(start, pos);
    return (strict ? strictUtf8 : looseUtf8).decode(buf.subarray(start, pos));
  }

  function bytes(): Uint8Array {
    const end = lengthEnd();
    const start = pos;
    pos = end;
    return buf.subarray(start, pos);
  }

  function bool(): boolean {
    const b = buf[pos]!;
    if (b < 0x80 && pos < len) {
      pos++;
      return b !== 0;
    }
    varint64();
    return lo !== 0 || hi !== 0;
  }

  /** `n` fixed bytes at `pos`, inside the enclosing record; returns where they start. */
  function fixed(n: number): number {
    pos += n;
    eof();
    return pos - n;
  }
  const double = (): number => view.getFloat64(fixed(8), true);
  const float = (): number => view.getFloat32(fixed(4), true);
  const fixed32 = (): number => view.getUint32(fixed(4), true);
  const sfixed32 = (): number => view.getInt32(fixed(4), true);
  function fixed64(signed: boolean): bigint {
    int64View.setInt32(0, sfixed32(), true);
    int64View.setInt32(4, sfixed32(), true);
    return signed ? int64View.getBigInt64(0, true) : int64View.getBigUint64(0, true);
  }

  /** Reader, wire type, JSON writer (protojson's) and default test for a scalar type. */
  function scalar(type: ScalarType, strict: boolean): Pick<Field, "read" | "json" | "isZero" | "wire"> {
    const same = (v: unknown) => v;
    const str = (v: unknown) => String(v);
    const zeroNum = (v: unknown) => v === 0;
    const zeroLong = (v: unknown) => v === 0n;
    switch (type) {
      case ScalarType.STRING:
        return { wire: 2, read: () => string(strict), json: same, isZero: (v) => v === "" };
      case ScalarType.BOOL:
        return { wire: 0, read: bool, json: same, isZero: (v) => v === false };
      case ScalarType.INT32:
        return { wire: 0, read: () => varint32() | 0, json: same, isZero: zeroNum };
      case ScalarType.UINT32:
        return { wire: 0, read: varint32, json: same, isZero: zeroNum };
      case ScalarType.SINT32:
        return { wire: 0, read: () => { const z = varint32(); return (z >>> 1) ^ -(z & 1); }, json: same, isZero: zeroNum };
      case ScalarType.FIXED32:
        return { wire: 5, read: fixed32, json: same, isZero: zeroNum };
      case ScalarType.SFIXED32:
        return { wire: 5, read: sfixed32, json: same, isZero: zeroNum };
      case ScalarType.INT64:
        return { wire: 0, read: int64, json: str, isZero: zeroLong };
      case ScalarType.UINT64:
        return { wire: 0, read: uint64, json: str, isZero: zeroLong };
      case ScalarType.FIXED64:
        return { wire: 1, read: () => fixed64(false), json: str, isZero: zeroLong };
      case ScalarType.SFIXED64:
        return { wire: 1, read: () => fixed64(true), json: str, isZero: zeroLong };
      case ScalarType.SINT64:
        return {
          wire: 0,
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
          wire: type === ScalarType.DOUBLE ? 1 : 5,
          read: type === ScalarType.DOUBLE ? double : float,
          json: (v) => Number.isNaN(v) ? "NaN" : v === Infinity ? "Infinity" : v === -Infinity ? "-Infinity" : v,
          isZero: (v) => Object.is(v, 0), // -0 is printed
        };
      case ScalarType.BYTES:
        return {
          wire: 2,
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
  function enumType(field: DescField & { enum: NonNullable<DescField["enum"]> }): Pick<Field, "read" | "json" | "isZero" | "wire"> {
    if (!field.enum.open) throw new Error(`closed enum ${field.enum.typeName} not supported`);
    if (field.enum.typeName === "google.protobuf.NullValue") {
      return { wire: 0, read: () => varint32() | 0, json: () => null, isZero: (v) => v === field.enum.values[0]!.number };
    }
    const names = new Map<number, string>(field.enum.values.map((v) => [v.number, v.jsonName]));
    const zero = field.enum.values[0]!.number;
    return { wire: 0, read: () => varint32() | 0, json: (v) => names.get(v as number) ?? v, isZero: (v) => v === zero };
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
          return field({ ...base, kind: "message", wire: 2, table: compile(f.message) });
        case "list": {
          if (f.listKind === "message") return field({ ...base, kind: "list", wire: 2, table: compile(f.message) });
          const item = f.listKind === "enum" ? enumType(f) : scalar(f.scalar, f.utf8Validation);
          const packable = f.listKind === "enum" || (f.scalar !== ScalarType.STRING && f.scalar !== ScalarType.BYTES);
          return field({ ...base, kind: "list", ...item, packable });
        }
        case "map": {
          const keyType = scalar(f.mapKey, f.utf8Validation);
          // Map keys are object keys: protobuf-es stringifies them (`String(true)`, `String(5n)`).
          const readKey = () => String(keyType.read());
          const keyZero = String(f.mapKey === ScalarType.BOOL ? false : f.mapKey === ScalarType.STRING ? "" : 0);
          const keyOrder = f.mapKey === ScalarType.STRING ? codePointOrder : f.mapKey === ScalarType.BOOL ? boolOrder : numericOrder;
          const map = { ...base, kind: "map" as const, wire: 2, readKey, keyWire: keyType.wire, keyZero, keyOrder };
          if (f.mapKind === "message") return field({ ...map, valueWire: 2, table: compile(f.message), missing: () => [] });
          const { wire: valueWire, ...value } = f.mapKind === "enum" ? enumType(f) : scalar(f.scalar, f.utf8Validation);
          const zero = f.mapKind === "enum" ? f.enum.values[0]!.number
            : f.scalar === ScalarType.BYTES ? new Uint8Array(0)
            : f.scalar === ScalarType.STRING ? "" : f.scalar === ScalarType.BOOL ? false
            : f.scalar === ScalarType.INT64 || f.scalar === ScalarType.UINT64 || f.scalar === ScalarType.SINT64 ||
                f.scalar === ScalarType.FIXED64 || f.scalar === ScalarType.SFIXED64 ? 0n : 0;
          return field({ ...map, ...value, valueWire, missing: () => zero });
        }
      }
    });
    for (const f of fields) {
      const d = sorted[f.slot]!;
      if (d.oneof) f.siblings = d.oneof.fields.filter((o) => o !== d).map((o) => sorted.indexOf(o));
      // Implicit presence only for proto3 scalars outside a oneof; everything else prints when set.
      if (f.kind !== "scalar" || d.oneof || d.presence !== 2 /* IMPLICIT */) f.isZero = undefined;
      table.byNo[f.no] = f;
    }
    table.fields = fields;
    table.wkt = wkt(desc.typeName, table);
    return table;
  }

  /**
   * Reads one message body (`pos` up to `end`) into `s`, merging, like protobuf-go's `unmarshalPointer`:
   * nothing inside may reach past `end`.
   */
  function readMessage(t: Table, s: Slots, end: number): void {
    if (++depth > RECURSION_LIMIT) throw new Error(`cannot decode ${t.name}: exceeded maximum recursion depth`);
    const outer = len;
    len = end;
    while (pos < end) {
      const tg = tag();
      const wire = tg & 7;
      const f = t.byNo[tg >>> 3];
      if (f === undefined || (wire !== f.wire && !(wire === 2 && f.packable))) skip(wire, tg >>> 3, RECURSION_LIMIT);
      else readField(f, s, wire);
    }
    len = outer;
    depth--;
  }

  /** Reads a value of `f` whose wire type matched. */
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
        readMessage(f.table!, child, lengthEnd());
        s[f.slot] = child;
        return;
      }
      case "list": {
        const items = (s[f.slot] ??= []) as unknown[];
        if (f.table) {
          const child: Slots = [];
          readMessage(f.table, child, lengthEnd());
          items.push(child);
        } else if (wireType === 2 && f.packable) {
          const end = lengthEnd();
          const outer = len;
          len = end;
          while (pos < end) items.push(f.read());
          len = outer;
        } else {
          items.push(f.read());
        }
        return;
      }
      case "map": {
        const map = (s[f.slot] ??= new Map()) as Map<string, unknown>;
        const end = lengthEnd();
        const outer = len;
        len = end;
        let key: string | undefined;
        let val: unknown;
        while (pos < end) {
          const tg = tag();
          const no = tg >>> 3;
          const wire = tg & 7;
          if (no === 1 && wire === f.keyWire) key = f.readKey!();
          else if (no === 2 && wire === f.valueWire) {
            if (f.table) {
              const child = (val ?? []) as Slots; // a repeated value merges within its entry
              readMessage(f.table, child, lengthEnd());
              val = child;
            } else val = f.read();
          } else skip(wire, no, RECURSION_LIMIT);
        }
        len = outer;
        map.set(key ?? f.keyZero!, val === undefined ? f.missing!() : val);
        return;
      }
    }
  }

  /**
   * Binary protobuf → proto3 JSON, as Go's `proto.Unmarshal` + `protojson.Marshal` give it. Throws on
   * what either rejects. Also throws, at first use of a message type, if its closure uses something
   * this decoder does not handle (closed enums, groups, Any, wrappers, FieldMask).
   */
  function fromBinaryToJson(desc: DescMessage, data: Uint8Array): unknown {
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
    text = asciiText(data);
    try {
      const s: Slots = [];
      readMessage(t, s, len);
      return json(t, s);
    } finally {
      buf = new Uint8Array(0); // do not keep the caller's bytes alive
      text = "";
    }
  }

  return fromBinaryToJson;
}
