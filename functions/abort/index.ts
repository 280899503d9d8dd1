/** The abort channel: request an abort, the error it raises, and the task-token port. */
export * from "./errors.ts";
export * from "./request-abort.ts";
export * from "./task-tokens.ts";
