/**
 * The spec language: parse Argo Rollouts objects or the native spec, plan, and compile to ASL.
 *
 * @module sfn-rollouts/statemachine
 */
export { type CompileOptions, compile, type StateMachineDefinition } from "./compile.ts";
export {
  type Condition,
  ConditionEvaluationError,
  ConditionSyntaxError,
  compileCondition,
} from "./conditions.ts";
export { type BudgetShare, budgetOf, DEFAULT_ERROR_BUDGET, ERROR_BUDGET_ANNOTATION } from "./error-budget.ts";
export { RolloutsError } from "./errors.ts";
export { JUDGE_DEFAULTS, JUDGE_PLUGIN } from "./judge-load.ts";
export {
  type Loaded,
  loadAnalysisTemplates,
  loadRollout,
  parseRollout,
  parseSources,
  readDocuments,
  readSources,
  readSourcesSync,
  type Source,
} from "./load.ts";
export { type Plan, type PlanGate, type PlanStep, plan } from "./plan.ts";
export { formatProblem, type Problem, SpecError } from "./problems.ts";
export * from "./spec.ts";
export type { CoordinatedPass } from "./waves-compile.ts";
