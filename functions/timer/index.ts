/** The Timer port and its adapters (Scheduler, ticker, routing between them, in-process). */
export * from "./in-process.ts";
export * from "./names.ts";
export * from "./port.ts";
export * from "./routing.ts";
export * from "./scheduler.ts";
export * from "./ticker.ts";
