/**
 * Wires a {@link ClusterConfig} into a {@link KubeClient}: credentials from
 * `credentials.ts`, the TLS transport from `transport.ts`. When an exec plugin
 * hands out a (new) client certificate, a new transport is created with it and
 * the old one is closed (in-flight requests on it are allowed to finish; see
 * {@link Transport.close}); no runtime can swap the certificate of an existing
 * Deno HttpClient or undici Agent.
 * @module
 */
import { type FetchLike, KubeClient } from "./client.ts";
import { loadClusterConfig, type LoadClusterConfigOptions } from "./cluster-config.ts";
import { type ClientCertificate, createCredentials, type CredentialsOptions } from "./credentials.ts";
import { createTransport, type Transport } from "./transport.ts";
import type { ClusterConfig, TlsConfig } from "./types.ts";
import type { Logger } from "../log.ts";
import { silentLogger } from "../log.ts";

/** Options for {@link createKubeClient}. */
export interface CreateKubeClientOptions {
  logger?: Logger;
  /** `User-Agent` header (default `appwatch/0.1`). */
  userAgent?: string;
  /** Credential tuning (refresh periods, clock, exec runner); `logger` and `source` are filled in. */
  credentials?: Omit<CredentialsOptions, "logger" | "source">;
  /** Transport factory (default {@link createTransport} for `config.server`). */
  createTransport?: (tls: TlsConfig) => Promise<Transport>;
}

/** Creates a client for `config`. Throws early when the runtime cannot honour the TLS settings. */
export async function createKubeClient(config: ClusterConfig, options: CreateKubeClientOptions = {}): Promise<KubeClient> {
  const logger = options.logger ?? silentLogger;
  const credentials = createCredentials(config.auth, { ...options.credentials, logger, source: config.source });
  const make = options.createTransport ?? ((tls: TlsConfig) => createTransport(tls, { server: config.server }));

  let transport = await make(config.tls);
  let certificate: ClientCertificate | undefined; // the exec certificate `transport` uses
  let switching: Promise<Transport> | undefined;
  const closing: Promise<void>[] = [];
  let closed = false;

  const transportFor = (cc: ClientCertificate | undefined): Promise<Transport> => {
    if (cc === certificate) return Promise.resolve(transport);
    switching ??= (async () => {
      const tls: TlsConfig = { ...config.tls };
      if (cc) {
        tls.cert = cc.cert;
        tls.key = cc.key;
      }
      const next = await make(tls);
      const old = transport;
      transport = next;
      certificate = cc;
      logger.info("client certificate from the exec plugin changed; using a new TLS transport", {
        source: config.source,
      });
      closing.push(old.close().catch(() => {}));
      if (closed) await next.close();
      return next;
    })().finally(() => {
      switching = undefined;
    });
    return switching;
  };

  const fetchLike: FetchLike = credentials.type === "exec"
    ? async (input, init) => {
      const t = await transportFor(await credentials.clientCertificate());
      return await t.fetch(input, init);
    }
    : (input, init) => transport.fetch(input, init);

  logger.debug("kubernetes client created", {
    source: config.source,
    server: config.server,
    namespace: config.namespace,
    auth: config.auth.type,
  });
  return new KubeClient({
    server: config.server,
    namespace: config.namespace,
    credentials,
    fetch: fetchLike,
    close: async () => {
      closed = true;
      await switching?.catch(() => {});
      await Promise.all([transport.close(), ...closing]);
    },
    userAgent: options.userAgent,
  });
}

/** Options for {@link connect}. */
export type ConnectOptions = LoadClusterConfigOptions & Omit<CreateKubeClientOptions, "logger">;

/** `loadClusterConfig` + `createKubeClient`. */
export async function connect(options: ConnectOptions = {}): Promise<KubeClient> {
  const config = await loadClusterConfig(options);
  return await createKubeClient(config, options);
}
