/**
 * AppService's paths and appwatch's own Connect headers: what the routes, the gRPC listener and
 * clients share.
 * @module
 */
import { AppService } from "../../flyte/proto/app_service_pb.ts";

/** The service's path, without the `/internal` prefix. */
export const APP_SERVICE_PATH = `/${AppService.typeName}`;
/** The RPCs `AppService` declares (any other path under the service is a 404). */
export const APP_SERVICE_METHODS: readonly string[] = AppService.methods.map((m) => m.name);

/**
 * Request header: resume a Watch after this token (Flyte's `WatchRequest` has no field for it).
 * Response header: the position the snapshot or replay is consistent at; trailer: the position
 * after the last event sent. Same tokens as `/v1/watch`.
 */
export const RESUME_HEADER = "appwatch-resume";
/** Response header: how the Watch started (`snapshot`, `resumed`), as in the `start` frame. */
export const START_HEADER = "appwatch-start";
/**
 * Response header, only on a Watch whose `appwatch-resume` could not be honoured (it started with
 * a snapshot): why, as the `start` frame's `resumeFailed` (`malformed`, `other-cluster`,
 * `unknown-stream`, `too-old`, `ahead`).
 */
export const RESUME_FAILED_HEADER = "appwatch-resume-failed";
