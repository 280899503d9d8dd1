/** The trigger's domain: ECR event → rollout → idempotent StartExecution, superseding older revisions. */
export * from "./decide.ts";
export * from "./event.ts";
export * from "./executions.ts";
export * from "./model-package.ts";
export * from "./routes.ts";
export * from "./start-rollout.ts";
