// appwatch as a library on Bun: a built-in sandbox cluster, AppK8sClient, a subscription with a
// snapshot, the first WatchResponses as JSON lines, then everything stopped.
//
//   npx bun examples/bun.ts
//
// Against a real cluster, replace the sandbox and the KubeClient with `await connect()`.
import { AppK8sClient, KubeClient, type WatchResponse } from "../mod.ts";
import { seedDemo, startDemoActivity, startSandbox } from "../src/sandbox/mod.ts"; // the package's ./sandbox entry

const EVENTS = 7; // the 5 demo apps (snapshot), then live changes

// 1. A local Kubernetes-compatible API server with five Flyte apps that keep changing.
const sandbox = await startSandbox();
seedDemo(sandbox.sandbox, { namespace: "flyte", count: 5 });
const activity = startDemoActivity(sandbox.sandbox, { intervalMs: 100 });

// 2. The Flyte app watcher against it.
const client = new KubeClient({ server: sandbox.url, namespace: "flyte" });
const apps = new AppK8sClient({ client, namespace: "flyte", config: { baseDomain: "example.com" } });
await apps.startWatching(AbortSignal.timeout(10_000)); // resolves after the initial sync

// 3. Every app, snapshot first ({createEvent} per app), then live {updateEvent}/{createEvent}/{deleteEvent}.
const subscription = apps.subscribe("", { snapshot: true });
const deadline = setTimeout(() => subscription.close(), 10_000); // never hang
let seen = 0;
for await (const response of subscription as AsyncIterable<WatchResponse>) {
  console.log(JSON.stringify(response));
  if (++seen >= EVENTS) break;
}
clearTimeout(deadline);

// 4. Stop everything; the process then exits on its own.
subscription.close();
activity.stop();
await apps.stopWatching();
await client.close();
await sandbox.close();
console.error(`bun example: ${seen} events`);
