/**
 * Query parameters of list and watch requests, decoded and validated in the same order as
 * kube-apiserver: decoding errors are 400, `ValidateListOptions` violations are one 422
 * (kind ListOptions) listing every failed rule.
 * @module
 */
import { badRequest, type FieldError, invalidListOptions } from "./errors.ts";
import { type FieldSelector, type LabelSelector, parseFieldSelector, parseLabelSelector, SelectorError } from "./selector.ts";

/** Decoded `ListOptions`. Empty strings mean "unset", as in the Go struct. */
export interface ListQuery {
  watch: boolean;
  labelSelector: LabelSelector;
  fieldSelector: FieldSelector;
  /** 0 = no limit. */
  limit: number;
  continueToken: string;
  resourceVersion: string;
  resourceVersionMatch: string;
  /** undefined when absent (it is a *bool). */
  sendInitialEvents: boolean | undefined;
  allowWatchBookmarks: boolean;
  /** undefined when absent or 0. */
  timeoutSeconds: number | undefined;
}

/** Go's `Convert_Slice_string_To_bool`: anything but "false"/"0" is true. */
export function queryBool(value: string | undefined): boolean | undefined {
  if (value === undefined) return undefined;
  const v = value.toLowerCase();
  return !(v === "false" || v === "0");
}

function queryInt(name: string, value: string | undefined): number | undefined {
  if (value === undefined || value === "") return undefined;
  if (!/^-?\d+$/.test(value)) throw badRequest(`${name}: strconv.ParseInt: parsing "${value}": invalid syntax`);
  return Number(value);
}

const forbidden = (field: string, detail: string): FieldError => ({ type: "FieldValueForbidden", field, detail: `Forbidden: ${detail}` });
const notSupported = (field: string, value: string, supported: string[]): FieldError => ({
  type: "FieldValueNotSupported",
  field,
  detail: `Unsupported value: "${value}": supported values: ${supported.map((s) => `"${s}"`).join(", ")}`,
});

/** Decodes and validates; throws a SandboxError (400 or 422). */
export function parseListQuery(query: Record<string, string>, options: { watchList: boolean; forceWatch?: boolean }): ListQuery {
  let labelSelector: LabelSelector;
  let fieldSelector: FieldSelector;
  try {
    labelSelector = parseLabelSelector(query.labelSelector ?? "");
    fieldSelector = parseFieldSelector(query.fieldSelector ?? "");
  } catch (e) {
    if (e instanceof SelectorError) throw badRequest(e.message);
    throw e;
  }
  const limit = Math.max(0, queryInt("limit", query.limit) ?? 0);
  const timeout = queryInt("timeoutSeconds", query.timeoutSeconds);
  const q: ListQuery = {
    watch: options.forceWatch === true || queryBool(query.watch) === true,
    labelSelector,
    fieldSelector,
    limit,
    continueToken: query.continue ?? "",
    resourceVersion: query.resourceVersion ?? "",
    resourceVersionMatch: query.resourceVersionMatch ?? "",
    sendInitialEvents: queryBool(query.sendInitialEvents),
    allowWatchBookmarks: queryBool(query.allowWatchBookmarks) === true,
    timeoutSeconds: timeout !== undefined && timeout > 0 ? timeout : undefined,
  };
  const errors = q.watch ? validateWatch(q, options.watchList) : validateList(q);
  if (errors.length > 0) throw invalidListOptions(errors);
  return q;
}

/** `validation.go: ValidateListOptions` for a list. */
function validateList(q: ListQuery): FieldError[] {
  const errs: FieldError[] = [];
  const match = q.resourceVersionMatch;
  if (match !== "") {
    if (q.resourceVersion === "") {
      errs.push(forbidden("resourceVersionMatch", "resourceVersionMatch is forbidden unless resourceVersion is provided"));
    }
    if (q.continueToken !== "") {
      errs.push(forbidden("resourceVersionMatch", "resourceVersionMatch is forbidden when continue is provided"));
    }
    if (match !== "Exact" && match !== "NotOlderThan") {
      errs.push(notSupported("resourceVersionMatch", match, ["Exact", "NotOlderThan", ""]));
    }
    if (match === "Exact" && q.resourceVersion === "0") {
      errs.push(forbidden("resourceVersionMatch", `resourceVersionMatch "exact" is forbidden for resourceVersion "0"`));
    }
  }
  if (q.sendInitialEvents !== undefined) {
    errs.push(forbidden("sendInitialEvents", "sendInitialEvents is forbidden for list"));
  }
  return errs;
}

/** `validation.go: validateWatchOptions`. */
function validateWatch(q: ListQuery, watchListEnabled: boolean): FieldError[] {
  const errs: FieldError[] = [];
  const match = q.resourceVersionMatch;
  if (q.sendInitialEvents !== undefined) {
    if (match !== "NotOlderThan") {
      errs.push(forbidden("resourceVersionMatch", "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan"));
    }
    if (!watchListEnabled) {
      errs.push(forbidden("sendInitialEvents", "sendInitialEvents is forbidden for watch unless the WatchList feature gate is enabled"));
    }
  }
  if (match !== "") {
    if (q.sendInitialEvents === undefined) {
      errs.push(forbidden("resourceVersionMatch", "resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided"));
    }
    if (match !== "NotOlderThan") errs.push(notSupported("resourceVersionMatch", match, ["NotOlderThan"]));
    if (q.continueToken !== "") {
      errs.push(forbidden("resourceVersionMatch", "resourceVersionMatch is forbidden when continue is provided"));
    }
  }
  return errs;
}

/** Parses a non-empty resourceVersion; the apiserver answers 400 for a non-numeric one. */
export function parseResourceVersion(rv: string): number {
  if (!/^\d+$/.test(rv)) throw badRequest(`invalid resource version: "${rv}"`);
  const n = Number(rv);
  if (!Number.isSafeInteger(n)) throw badRequest(`invalid resource version: "${rv}"`);
  return n;
}
