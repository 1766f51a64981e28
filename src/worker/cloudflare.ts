/**
 * Cloudflare entry: a Worker that sends every request to one Durable Object, and the Durable
 * Object (`AppwatchObject`) that holds the watch, the hub and every subscription. One object, so
 * all clients see one watch and one resume-token history; it starts on its first request.
 *
 * Bundle it with `node scripts/build-worker.mjs` and deploy as docs/edge-cloudflare.md says
 * (binding `APPWATCH` → class `AppwatchObject`). Only web standards and workerd's `WebSocketPair`
 * are used: the API server is reached with plain `fetch` and a bearer token (or none).
 * @module
 */
import { bearerToken, KubeClient, noCredentials } from "../kube/client.ts";
import { createLogger, type Logger } from "../log.ts";
import { createCloudflareRuntime } from "../service/adapters/cloudflare.ts";
import { type CloudflareSettings, settingsFromEnv } from "./cloudflare-env.ts";
import { compose, type Composition, VERSION } from "../service/compose.ts";

/** What the entry uses of a Durable Object namespace binding. */
interface DurableObjectNamespaceLike {
  idFromName(name: string): unknown;
  get(id: unknown): { fetch(request: Request): Promise<Response> };
}

/** An mTLS certificate binding (`[[mtls_certificates]]`): a `fetch` that presents the client certificate. */
interface Fetcher {
  fetch(input: string, init: RequestInit): Promise<Response>;
}

/** The Worker's bindings: `APPWATCH` (the Durable Object), optionally `APPWATCH_KUBE_MTLS` (an mTLS certificate), and the variables of `cloudflare-env.ts`. */
export interface CloudflareEnv {
  APPWATCH: DurableObjectNamespaceLike;
  [name: string]: unknown;
}

/** The one object every request goes to. */
const OBJECT_NAME = "appwatch";

/** A running composition inside the Durable Object. */
export type CloudflareService = Composition;

/**
 * The Durable Object's service: the one composition every entry runs ({@link compose}), on a
 * plain-`fetch` KubeClient (no kubeconfig or credential files here) and the workerd adapter.
 */
export function composeCloudflare(settings: CloudflareSettings, log: Logger, fetcher?: Fetcher): CloudflareService {
  const kube = new KubeClient({
    server: settings.apiServer,
    credentials: settings.token !== undefined ? bearerToken(settings.token) : noCredentials,
    // An mTLS certificate binding presents the client certificate; else the global fetch. Both
    // are called on their own object: workerd throws "Illegal invocation" for another `this`.
    fetch: fetcher ? (input, init) => fetcher.fetch(input, init) : (input, init) => fetch(input, init),
    userAgent: `appwatch/${VERSION} (cloudflare)`,
  });
  const apiServer = settings.apiServer;
  const service = compose(settings.service, {
    logger: log,
    cluster: { client: kube, namespaces: settings.namespaces, describe: apiServer, close: async () => {} },
    runtime: Object.assign(createCloudflareRuntime(), { runtime: "workerd" }),
  });
  log.info("appwatch started in a Durable Object", { cluster: apiServer, namespaces: settings.namespaces, auth: settings.service.authTokens.length > 0 });
  return service;
}

/** A `{"code","message"}` error (the service's error shape) for failures before the app exists. */
function failure(status: number, code: string, message: string): Response {
  return new Response(JSON.stringify({ code, message }), { status, headers: { "content-type": "application/json" } });
}

/** The Durable Object: the service, started by its first request. */
export class AppwatchObject {
  readonly #env: Record<string, unknown>;
  #service: CloudflareService | undefined;

  constructor(_state: unknown, env: Record<string, unknown>) {
    this.#env = env;
  }

  fetch(request: Request): Response | Promise<Response> {
    if (!this.#service) {
      const settings = settingsFromEnv(this.#env);
      if (!settings.ok) return failure(500, "failed_precondition", `the Worker's configuration is not valid: ${settings.message}`);
      const log = createLogger({ level: settings.value.logLevel });
      const mtls = this.#env.APPWATCH_KUBE_MTLS as Partial<Fetcher> | undefined;
      if (mtls !== undefined && typeof mtls?.fetch !== "function") return failure(500, "failed_precondition", "APPWATCH_KUBE_MTLS must be an mTLS certificate binding");
      const service = composeCloudflare(settings.value, log, mtls as Fetcher | undefined);
      this.#service = service;
      // A watch that can never work (Knative missing, forbidden) is dropped, so a later request
      // starts a fresh one once the cluster is fixed; /readyz says why until then.
      service.watching.catch(() => {
        setTimeout(() => {
          if (this.#service === service) this.#service = undefined;
          void service.stop();
        }, 30_000);
      });
    }
    return this.#service.api.app.fetch(request);
  }
}

/** The Worker: every request goes to the one Durable Object. */
export default {
  fetch(request: Request, env: CloudflareEnv): Promise<Response> | Response {
    const ns = env.APPWATCH;
    if (!ns || typeof ns.idFromName !== "function") {
      return failure(500, "failed_precondition", "the Durable Object binding APPWATCH (class AppwatchObject) is missing");
    }
    return ns.get(ns.idFromName(OBJECT_NAME)).fetch(request);
  },
};
