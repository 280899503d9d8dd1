/** Lifecycle events: the port, the EventBridge adapter and a recording publisher for tests. */
export * from "./eventbridge.ts";
export * from "./memory.ts";
export * from "./port.ts";
