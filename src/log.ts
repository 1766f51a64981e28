/**
 * Structured JSON-lines logging to stderr. Values under keys that look like
 * secrets (token, password, key, authorization, …) are always redacted, so a
 * caller can pass a whole config object without leaking credentials.
 * @module
 */

/** Log levels, lowest first. */
export type LogLevel = "debug" | "info" | "warn" | "error";

const LEVELS: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40 };

/** A structured logger: a message plus flat or nested fields. */
export interface Logger {
  debug(msg: string, fields?: Record<string, unknown>): void;
  info(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
  error(msg: string, fields?: Record<string, unknown>): void;
  /** A logger that adds `fields` to every record. */
  child(fields: Record<string, unknown>): Logger;
}

const SECRET_KEY = /token|password|secret|authorization|bearer|(^|[-_])key($|[-_])|key-data|keydata|privatekey|cookie/i;

/** Replaces secret-looking values with "[redacted]" (deep, cycle-safe). */
export function redact(value: unknown, seen: WeakSet<object> = new WeakSet()): unknown {
  if (value instanceof Error) {
    return { name: value.name, message: value.message, ...(redact({ ...value }, seen) as object) };
  }
  if (value === null || typeof value !== "object") return value;
  if (seen.has(value)) return "[cycle]";
  seen.add(value);
  if (Array.isArray(value)) return value.map((v) => redact(v, seen));
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) {
    out[k] = SECRET_KEY.test(k) && v !== undefined && typeof v !== "number" && typeof v !== "boolean"
      ? "[redacted]"
      : redact(v, seen);
  }
  return out;
}

/** Where log lines go; tests capture them. */
export type LogSink = (line: string) => void;

const stderrSink: LogSink = (line) => {
  // console.error writes to stderr on all three runtimes.
  console.error(line);
};

/** Creates a JSON-lines logger. */
export function createLogger(
  options: { level?: LogLevel; sink?: LogSink; fields?: Record<string, unknown> } = {},
): Logger {
  const min = LEVELS[options.level ?? "info"];
  const sink = options.sink ?? stderrSink;
  const base = options.fields ?? {};
  const write = (level: LogLevel, msg: string, fields?: Record<string, unknown>) => {
    if (LEVELS[level] < min) return;
    const record = redact({ time: new Date().toISOString(), level, msg, ...base, ...fields });
    sink(JSON.stringify(record));
  };
  return {
    debug: (m, f) => write("debug", m, f),
    info: (m, f) => write("info", m, f),
    warn: (m, f) => write("warn", m, f),
    error: (m, f) => write("error", m, f),
    child: (fields) => createLogger({ level: options.level, sink, fields: { ...base, ...fields } }),
  };
}

/** A logger that discards everything. */
export const silentLogger: Logger = createLogger({ level: "error", sink: () => {} });
