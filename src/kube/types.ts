/**
 * What it takes to talk to one API server: {@link ClusterConfig} (the server, TLS as PEM text, how
 * requests authenticate). `loadClusterConfig` (`cluster-config.ts`) makes one; `credentials.ts`,
 * `transport.ts` and `connect.ts` turn it into a working client.
 * @module
 */
import type { ExecConfig } from "./kubeconfig.ts";

/** TLS settings for the API server connection (PEM text, never file paths). */
export interface TlsConfig {
  /** CA bundle that signs the API server certificate. */
  ca?: string;
  /** Client certificate (chain). */
  cert?: string;
  /** Client private key: RSA PKCS#1, PKCS#8 or EC SEC1 PEM. */
  key?: string;
  insecureSkipVerify: boolean;
  /** Name to verify the server certificate against (and send as SNI) instead of the URL host. */
  serverName?: string;
}

/** Cluster information handed to an exec plugin when `provideClusterInfo` is true. */
export interface ExecClusterInfo {
  server: string;
  /** base64 of the CA PEM, as in the kubeconfig. */
  certificateAuthorityData?: string;
  insecureSkipTlsVerify?: boolean;
  tlsServerName?: string;
  /** The cluster's `client.authentication.k8s.io/exec` extension, if any. */
  config?: unknown;
}

/** How requests authenticate (client certificates live in {@link TlsConfig}). */
export type ClusterAuth =
  | { type: "none" }
  | { type: "token"; token: string }
  | { type: "tokenFile"; path: string }
  | { type: "basic"; username: string; password: string }
  | { type: "exec"; exec: ExecConfig; cluster?: ExecClusterInfo };

/** Everything needed to talk to one API server. */
export interface ClusterConfig {
  /** Base URL, e.g. `https://127.0.0.1:6443` (no trailing slash). */
  server: string;
  /** Context / service-account namespace. */
  namespace: string | undefined;
  tls: TlsConfig;
  auth: ClusterAuth;
  /** e.g. `kubeconfig /root/.kube/config, context "kind-kind"` or `in-cluster` (for logs; never secrets). */
  source: string;
}
