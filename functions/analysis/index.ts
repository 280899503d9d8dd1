/** The analysis domain: conditions, measurements, assessment and the run lifecycle. */

export { evaluateResult } from "./evaluate.ts";
export { toArgoJson } from "./json.ts";

export {
  createRun,
  measurementsTaken,
  nextTickAt,
  terminate,
  tick,
} from "./run.ts";
export * from "./types.ts";
