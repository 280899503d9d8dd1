/**
 * Where the model router keeps its observations and its configuration in the controller's table
 * (`functions/store/keys.ts`): a partition of its own per router, so the router's writes never
 * touch a rollout's partition and a `/compare` window is one Query. A router is named by what it
 * routes to: a SageMaker target's by its endpoint (one rollout drives one endpoint), which is what
 * both the target (from its settings) and the router function (from its environment) know.
 *
 * - `MODEL#<router>` / `A#<completed at, epoch ms, 13 digits>#<s|v>#<request id>`: one answer
 *   (`s` served, `v` shadow), ordered by time; feedback is an attribute set on it later;
 * - `MODEL#<router>` / `R#<request id>`: where the served answer of a request id is (its sort key,
 *   version and prediction), so feedback finds it without a scan;
 * - `MODEL#<router>` / `CONFIG`: the routing configuration the target writes and the router reads.
 * Answers and request ids carry the TTL attribute, so they go away on their own.
 */
export { modelPk } from "../store/keys.ts";
export const MODEL_CONFIG_SK = "CONFIG";
export const ANSWER_SK_PREFIX = "A#";
export const REQUEST_SK_PREFIX = "R#";

/** Epoch ms, zero-padded so the sort key orders by time (until the year 2286). */
export const padTime = (ms: number): string => String(Math.max(0, Math.floor(ms))).padStart(13, "0");

export const answerSk = (at: number, role: "served" | "shadow", requestId: string): string =>
  `${ANSWER_SK_PREFIX}${padTime(at)}#${role === "served" ? "s" : "v"}#${requestId}`;
export const requestSk = (requestId: string): string => `${REQUEST_SK_PREFIX}${requestId}`;
