/**
 * The API group, version and resources the sandbox serves, as the Knative CRDs define them.
 * @module
 */
import type { SandboxResource } from "./types.ts";

export const GROUP = "serving.knative.dev";
export const VERSION = "v1";
export const API_VERSION = `${GROUP}/${VERSION}`;
/** URL prefix of the group version. */
export const API_PREFIX = `/apis/${API_VERSION}`;

/** Names of one resource, as in its CRD. */
export interface ResourceInfo {
  readonly plural: SandboxResource;
  readonly singular: string;
  readonly kind: string;
  readonly listKind: string;
  readonly shortNames: readonly string[];
}

export const RESOURCES: Readonly<Record<SandboxResource, ResourceInfo>> = {
  services: {
    plural: "services",
    singular: "service",
    kind: "Service",
    listKind: "ServiceList",
    shortNames: ["kservice", "ksvc"],
  },
  revisions: {
    plural: "revisions",
    singular: "revision",
    kind: "Revision",
    listKind: "RevisionList",
    shortNames: ["rev"],
  },
};

export const RESOURCE_NAMES: readonly SandboxResource[] = ["services", "revisions"];

export function isSandboxResource(s: string): s is SandboxResource {
  return s === "services" || s === "revisions";
}

/** `services.serving.knative.dev`, as used in error messages. */
export function qualifiedResource(resource: SandboxResource): string {
  return `${resource}.${GROUP}`;
}
