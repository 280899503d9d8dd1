/**
 * `@sfn-rollouts/local/simulate`: the embedded runtime's side of `rollouts simulate` (the contract
 * is the CLI's `SimulationRuntime`).
 */
export { simulate } from "./run.ts";
