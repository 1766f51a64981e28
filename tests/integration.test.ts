/**
 * The integration scenarios (tests/cluster/scenarios.ts) against the sandbox
 * API server. The same scenarios run against a real kube-apiserver in
 * `npm run test:cluster` (tests/cluster/real.cluster.ts).
 */
import { defineScenarios } from "./cluster/scenarios.ts";
import { sandboxTarget } from "./cluster/targets.ts";

defineScenarios("sandbox", sandboxTarget, "sandbox");
