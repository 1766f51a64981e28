/**
 * Starts a real kube-apiserver + etcd on loopback (tests/cluster/cluster.ts) for manual use, prints
 * how to reach it, and keeps it running until Ctrl-C (which stops it and removes its temp dir).
 *
 *   node --import tsx scripts/cluster.ts [--no-watch-cache] [--feature-gates=WatchList=false] [--deploy]
 *   KUBECONFIG=<printed path> npm start
 *
 * --deploy also creates the `flyte` namespace and applies deploy/ (ServiceAccount + RBAC) and prints
 * a ServiceAccount token for flyte/appwatch.
 */
import process from "node:process";
import { realClusterAvailable, startRealCluster } from "../tests/cluster/cluster.ts";

const args = process.argv.slice(2);
if (args.includes("-h") || args.includes("--help")) {
  console.log("usage: node --import tsx scripts/cluster.ts [--no-watch-cache] [--feature-gates=<gates>] [--deploy]");
  process.exit(0);
}
const available = realClusterAvailable();
if (!available.ok) {
  console.error(`cannot start a real cluster: ${available.reason}`);
  process.exit(1);
}
const gates = args.find((a) => a.startsWith("--feature-gates="))?.slice("--feature-gates=".length);
const started = Date.now();
const cluster = await startRealCluster({ watchCache: !args.includes("--no-watch-cache"), ...(gates ? { featureGates: gates } : {}) });
console.log(`kube-apiserver ready in ${((Date.now() - started) / 1000).toFixed(1)}s`);
console.log(`url:        ${cluster.url}`);
console.log(`etcd:       ${cluster.etcdUrl}`);
console.log(`kubeconfig: ${cluster.kubeconfigPath}`);
console.log(`logs:       ${cluster.logDir}`);
if (args.includes("--deploy")) {
  await cluster.applyManifests(["deploy"]);
  console.log(`applied deploy/; appwatch token (1h): ${await cluster.serviceAccountToken("flyte", "appwatch", 3600)}`);
}
console.log("Ctrl-C to stop");
const stop = async () => {
  await cluster.stop();
  process.exit(0);
};
process.once("SIGINT", stop);
process.once("SIGTERM", stop);
setInterval(() => {}, 1 << 30);
