export * from "./check.ts";
export * from "./event.ts";
export * from "./on-alarm.ts";
export * from "./port.ts";
