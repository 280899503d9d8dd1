export * from "./lambda.ts";
export * from "./payload.ts";
export * from "./port.ts";
