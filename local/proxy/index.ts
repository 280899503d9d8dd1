/** The local proxy's public API, for the embedded runtime, the demo and the tests. */
export { matchesRoute, type ProxyConfig, ProxyConfigSchema, ProxyConfigUpdateSchema } from "./config.ts";
export { ExactShare } from "./exact-share.ts";
export { type ProxyOptions, type RunningProxy, startProxy, type TestersHeader } from "./server.ts";
