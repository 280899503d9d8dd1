/**
 * The spec language: parse Argo Rollouts objects or the native spec, plan, and compile to ASL.
 *
 * @module sfn-rollouts/statemachine
 */
export type { AnalysisRef, LoadedTemplate, Origin } from "./analysis-resolve.ts";
export { RUNTIME_PLACEHOLDERS } from "./analysis-resolve.ts";
export {
  analysisUpperBoundSeconds,
  type CompileOptions,
  compile,
  definitionProblems,
  deployedDefinitionSize,
  EXECUTION_SUPERSEDED,
  FUNCTION_PLACEHOLDERS,
  type FunctionRole,
  LAMBDA_SERVICE_RETRY,
  metricUpperBoundSeconds,
  READY_POLL_SECONDS,
  ROLLOUT_ABORTED,
  type StateMachineDefinition,
  stepStateName,
  TIMER_SLACK_SECONDS,
  TRANSIENT_LAMBDA_ERRORS,
} from "./compile.ts";
export {
  type Condition,
  ConditionEvaluationError,
  ConditionSyntaxError,
  compileCondition,
  compileExpression,
  type Expression,
} from "./conditions.ts";
export { formatDuration, parseDuration } from "./duration.ts";
export {
  applyErrorBudget,
  type BudgetShare,
  budgetOf,
  DEFAULT_ERROR_BUDGET,
  ERROR_BUDGET_ANNOTATION,
  rebudget,
} from "./error-budget.ts";
export { RolloutsError } from "./errors.ts";
export { describeJudge, judgeSamplesNeeded } from "./judge-describe.ts";
export { JUDGE_DEFAULTS, JUDGE_PLACEHOLDERS, JUDGE_PLUGIN } from "./judge-load.ts";
export * from "./limits.ts";
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
export * from "./names.ts";
export {
  DEFAULT_TEMPLATES,
  NOTIFICATION_TRIGGERS,
  type NotificationSubscription,
  type NotificationSubscriptionInput,
  NotificationSubscriptionSchema,
  type NotificationTrigger,
  parseTemplate,
  TEMPLATE_FIELDS,
  type TemplateField,
  type TemplatePart,
} from "./notifications.ts";
export { describeAnalysis, describeMetric, type Plan, type PlanGate, type PlanStep, plan } from "./plan.ts";
export { canaryCounts, resolveMaxSurge, routedCanaryCounts } from "./pods.ts";
export { formatProblem, type Problem, SpecError } from "./problems.ts";
export { canonicalJson, revisionOf } from "./revision.ts";
export { samplesOneProportion, samplesPerSide, secondsToSamples } from "./sample-size.ts";
export * from "./spec.ts";
export {
  type CoordinatedPass,
  compileWaves,
  START_EXECUTION_SYNC,
  WAVE_FAILED,
  WAVE_SUPERSEDED,
  wavePlaceholders,
} from "./waves-compile.ts";
