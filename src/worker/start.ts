/**
 * What the process-style worker entries (`deno serve` on `deno.ts`, Bun's default export in
 * `bun.ts`) do before they hand Bun or Deno a `fetch`: read the `serve` settings from the
 * environment (`APPWATCH_*`, `APPWATCH_CONFIG`: the same table as `npm start`), choose the cluster
 * the way the CLI does (`openCluster`: kubeconfig, in-cluster, or the sandbox when configured),
 * and run the one composition (`service/compose.ts`) with the entry's adapter. The runtime owns the
 * listener; the entry only wires signals and the export.
 *
 * It runs at module load, once per process or isolate (`deno serve --parallel`: one per worker):
 * both runtimes keep the module alive for the life of the server, so the watch syncs before the
 * first client arrives, `/readyz` tells the truth from the start, and a configuration mistake
 * stops the start instead of failing every request.
 * @module
 */
import { ClusterChoiceError, type OpenedCluster, openCluster } from "../cli.ts";
import { createLogger, type Logger } from "../log.ts";
import type { AdapterOptions } from "../service/adapters/types.ts";
import { exposureWarning, runtimeLimitsWarning } from "../service/exposure.ts";
import { ConfigError, describeSettings, type LoadedSettings, loadSettings, type ServiceSettings } from "../service/settings/mod.ts";
import { adapterOptions, type ClusterSource, compose, type ComposeRuntime, type Composition } from "../service/compose.ts";

/** What an entry gives {@link startWorker}. */
export interface WorkerIo<R extends ComposeRuntime> {
  /** The entry's name, for logs (`deno serve`, `bun`). */
  entry: string;
  env: Record<string, string | undefined>;
  /** The runtime's adapter, made from the settings' adapter options. */
  adapter(options: Required<AdapterOptions>): R;
  stderr(line: string): void;
  /** Ends the process (2: configuration error, 1: cannot start or cannot watch, 0: stopped). */
  exit(code: number): never;
  /** Milliseconds now (a second signal within a second of the first is the same keypress). */
  now?: () => number;
}

/** A started worker entry. */
export interface Worker<R extends ComposeRuntime> {
  readonly composition: Composition<ClusterSource>;
  readonly runtime: R;
  readonly settings: ServiceSettings;
  readonly logger: Logger;
  /** The listen address set by the configuration (env or file), if any; else the runtime's default applies. */
  readonly address: { port?: number; hostname?: string };
  /** Logs where the runtime listens (Deno's `onListen`), and warns when that is beyond loopback without auth (and, on Deno, with its limits). */
  listening(url: string, hostname: string): void;
  /** Warns when `hostname` is beyond loopback and auth is off (Bun, which logs no listening line of ours, calls it). */
  checkExposure(hostname: string): void;
  /**
   * SIGTERM/SIGINT: the graceful stop (streams closed with 1001 / ended, the watch stopped, the
   * cluster released, within the shutdown deadline), then exit 0; a second signal more than a
   * second later exits at once.
   */
  onSignal(): void;
}

/** Reads the settings, opens the cluster, composes the service and starts its watch; exits on failure. */
export async function startWorker<R extends ComposeRuntime>(io: WorkerIo<R>): Promise<Worker<R>> {
  let loaded: LoadedSettings;
  try {
    // Settings come from the environment and the config file it names: the runtime owns the command line.
    loaded = loadSettings({ argv: [], env: io.env });
  } catch (err) {
    if (err instanceof ConfigError) {
      io.stderr(`appwatch (${io.entry}): ${err.message}\nThe settings are the APPWATCH_* variables and the file APPWATCH_CONFIG names (see appwatch --help).`);
      return io.exit(2);
    }
    throw err;
  }
  const settings = loaded.settings;
  const logger = createLogger({ level: settings.logLevel, sink: io.stderr });
  logger.info("starting appwatch", { entry: io.entry, ...describeSettings(loaded) });
  if (settings.grpcPort !== undefined) logger.warn("grpcPort is ignored by worker entries (gRPC needs its own HTTP/2 listener: use appwatch serve)", { entry: io.entry });

  let opened: OpenedCluster;
  try {
    opened = await openCluster(settings, { env: io.env, logger });
  } catch (err) {
    if (err instanceof ClusterChoiceError) {
      // No cluster configuration the sandbox may stand in for (as `appwatch serve`: exit 2).
      io.stderr(`appwatch (${io.entry}): ${err.message}`);
      return io.exit(2);
    }
    logger.error("appwatch could not start", { error: err instanceof Error ? err.message : String(err) });
    return io.exit(1);
  }
  const runtime = io.adapter(adapterOptions(settings));
  const composition = compose(settings, { logger, cluster: opened.source, runtime, sandbox: opened.sandbox });

  const now = io.now ?? Date.now;
  let firstSignalAt: number | undefined;
  const stopAndExit = (code: number) => void composition.stop().then(() => io.exit(code), () => io.exit(code));
  // The cluster says the watch can never work (Knative missing, forbidden): stop and exit 1, as `appwatch serve` does.
  composition.watching.catch((err: unknown) => {
    logger.error("appwatch cannot watch Flyte apps; exiting", { error: err instanceof Error ? err.message : String(err) });
    stopAndExit(1);
  });

  const address: { port?: number; hostname?: string } = {
    ...(loaded.sources.port !== "default" ? { port: settings.port } : {}),
    ...(loaded.sources.host !== "default" ? { hostname: settings.host } : {}),
  };
  const namespaces = opened.source.namespaces.includes("*") ? "*" : [...opened.source.namespaces];
  const checkExposure = (hostname: string) => {
    const exposed = exposureWarning(hostname, settings.authTokens.length > 0);
    if (exposed) logger.warn(exposed, { entry: io.entry, host: hostname });
    const limits = runtimeLimitsWarning(runtime.runtime, hostname);
    if (limits) logger.warn(limits, { entry: io.entry, host: hostname, runtime: runtime.runtime });
  };
  return {
    composition,
    runtime,
    settings,
    logger,
    address,
    listening(url, hostname) {
      logger.info("appwatch listening", { url, entry: io.entry, runtime: runtime.runtime, cluster: opened.source.describe, namespaces, auth: settings.authTokens.length > 0 });
      checkExposure(hostname);
    },
    checkExposure,
    onSignal() {
      if (firstSignalAt !== undefined) {
        if (now() - firstSignalAt > 1000) io.exit(130); // a deliberate second Ctrl-C: leave now
        return;
      }
      firstSignalAt = now();
      stopAndExit(0);
    },
  };
}
