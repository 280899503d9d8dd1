import { z } from "zod";
import { ARGO_DEFAULTS } from "../../statemachine/defaults.ts";
import { LIMIT_MESSAGES, MAX_REPLICAS, MAX_WAIT_SECONDS } from "../../statemachine/limits.ts";
import { formatIssues, issueLines } from "../../statemachine/problems.ts";
import type { RolloutSpec } from "../../statemachine/spec.ts";
import { MlflowSettingsSchema } from "../registry/settings.ts";
import { ModelRouterSettingsSchema } from "../router/settings.ts";
import { TargetConfigurationError } from "./errors.ts";
import { KubernetesSettingsSchema } from "./kubernetes/settings.ts";
import type { TargetType } from "./port.ts";

/** Seconds of a deadline or a poll: the readiness loop runs inside an execution, at most a year. */
const WaitSeconds = () => z.number().int().positive().max(MAX_WAIT_SECONDS, LIMIT_MESSAGES.wait);

/**
 * The settings of each traffic target. They reach a handler inside a Task's `Parameters` (the
 * compiler embeds them), so they are external input and are parsed here with messages that name
 * the field.
 */

const albArn = (kind: string) =>
  z
    .string()
    .regex(
      new RegExp(`^arn:aws[a-z-]*:elasticloadbalancing:[a-z0-9-]+:\\d{12}:${kind}/`),
      `an Elastic Load Balancing ${kind} ARN`,
    );

/**
 * ALB weighted target groups in front of two ECS services (slots a and b, the `aws-alb` router).
 * The forward action lives in the listener's default actions (`listenerArn`) or in one listener
 * rule (`ruleArn`).
 */
export const AlbEcsSettingsSchema = z
  .object({
    type: z.literal("alb-ecs"),
    /** Listener whose default forward action splits traffic; exclusive with `ruleArn`. */
    listenerArn: albArn("listener").optional(),
    /** Listener rule whose forward action splits traffic; exclusive with `listenerArn`. */
    ruleArn: albArn("listener-rule").optional(),
    targetGroupA: albArn("targetgroup"),
    targetGroupB: albArn("targetgroup"),
    /** ECS cluster name or ARN shared by both services. */
    cluster: z.string().min(1),
    serviceA: z.string().min(1),
    serviceB: z.string().min(1),
    /** The container whose image the candidate replaces. */
    containerName: z.string().min(1),
    /** An existing rule (say on a header) repointed at the candidate for testers. */
    testerRuleArn: albArn("listener-rule").optional(),
    /** Priority of the testers' rule this target creates when there is no `testerRuleArn`. */
    testerRulePriority: z.number().int().min(1).max(50_000).default(1),
    /** Seconds a deployment (or restoring a slot) may take before it fails. */
    progressDeadlineSeconds: WaitSeconds().default(ARGO_DEFAULTS.progressDeadlineSeconds),
    /** Tasks for the candidate when the stable service runs none (first release). */
    desiredCount: z.number().int().positive().max(MAX_REPLICAS, LIMIT_MESSAGES.replicas).default(1),
    /** Seconds between readiness polls, for the Wait state. */
    pollSeconds: WaitSeconds().default(15),
  })
  .strict()
  .refine((s) => (s.listenerArn === undefined) !== (s.ruleArn === undefined), {
    message: "give exactly one of listenerArn or ruleArn (where the forward action is)",
    path: ["listenerArn"],
  })
  .refine((s) => s.targetGroupA !== s.targetGroupB, {
    message: "targetGroupA and targetGroupB must differ",
    path: ["targetGroupB"],
  })
  .refine((s) => s.serviceA !== s.serviceB, {
    message: "serviceA and serviceB must differ",
    path: ["serviceB"],
  });

/** A weighted Lambda alias: the candidate is a published version with an additional weight. */
export const LambdaAliasSettingsSchema = z
  .object({
    type: z.literal("lambda-alias"),
    /** Function name or ARN (unqualified). */
    functionName: z.string().min(1),
    alias: z.string().min(1),
    /** How the function is packaged: an ECR image, or a zip in S3. */
    packageType: z.enum(["Image", "Zip"]).default("Image"),
    /** Bucket of the zip when the artifact names only the key. */
    s3Bucket: z.string().min(1).optional(),
    /** Seconds the code update and the new version may take before it fails. */
    progressDeadlineSeconds: WaitSeconds().default(300),
    pollSeconds: WaitSeconds().default(5),
  })
  .strict();

/**
 * A Lambda function's ARN, unqualified or with a version or an alias: what a target plugin is. An
 * alias is 1–128 characters (letters, digits, `-`, `_`), not all digits; a version is digits.
 */
export const LAMBDA_FUNCTION_ARN =
  /^arn:aws[a-z-]*:lambda:[a-z0-9-]+:\d{12}:function:[A-Za-z0-9_-]{1,64}(:(\$LATEST|\d+|(?!\d+$)[A-Za-z0-9_-]{1,128}))?$/;

/**
 * The keys of a plugin's `config` at any depth that Step Functions would read as a path: the
 * config is embedded in the Tasks' `Parameters`, where a key ending in `.$` is evaluated.
 */
function pathKeys(value: unknown, at: (string | number)[] = []): (string | number)[][] {
  if (Array.isArray(value)) return value.flatMap((v, i) => pathKeys(v, [...at, i]));
  if (value === null || typeof value !== "object") return [];
  return Object.entries(value).flatMap(([key, v]) => [
    ...(key.endsWith(".$") ? [[...at, key]] : []),
    ...pathKeys(v, [...at, key]),
  ]);
}

/** A target plugin's configuration: any JSON object, handed to the plugin on every call. */
const PluginConfigSchema = z.record(z.string(), z.json()).superRefine((config, ctx) => {
  for (const path of pathKeys(config)) {
    ctx.addIssue({
      code: "custom",
      path,
      message: 'a key ending in ".$" is a path that Step Functions evaluates in the Tasks\' Parameters',
    });
  }
});

/**
 * A target plugin: a traffic target implemented by the user's own Lambda function, which the
 * workflow invokes once per call of the port (`plugin.ts`, `docs/traffic.md`, "Target plugins").
 */
export const PluginSettingsSchema = z
  .object({
    type: z.literal("plugin"),
    /** The plugin's name, in messages and in the state it keeps (a state of another name is refused). */
    name: z
      .string()
      .regex(
        /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/,
        'a plugin name: 1–64 letters, digits, ".", "_" or "-", starting with a letter or a digit',
      ),
    /** The plugin's function: its ARN, optionally qualified by a version or an alias. */
    functionArn: z
      .string()
      .regex(
        LAMBDA_FUNCTION_ARN,
        "a Lambda function ARN (arn:aws:lambda:REGION:ACCOUNT:function:NAME, optionally :VERSION or :ALIAS)",
      ),
    /** Handed to the plugin on every call, as it is. */
    config: PluginConfigSchema.default({}),
    /** An MLflow tracking server whose registered model records the promoted version (an alias). */
    mlflow: MlflowSettingsSchema.optional(),
  })
  .strict();

/** A SageMaker name: endpoints, endpoint configs, models and variants (1–63 characters). */
const SageMakerName = (what: string) =>
  z
    .string()
    .regex(
      /^[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}$/,
      `a SageMaker ${what} name: 1–63 letters, digits and hyphens`,
    );

/**
 * A SageMaker real-time endpoint: the candidate is a second production variant (a model created
 * from the pushed model package or image) weighted with `UpdateEndpointWeightsAndCapacities`, or a
 * shadow variant for mirror steps.
 */
export const SageMakerSettingsSchema = z
  .object({
    type: z.literal("sagemaker"),
    endpointName: SageMakerName("endpoint"),
    /** The role SageMaker assumes to run the candidate model (`CreateModel`'s `ExecutionRoleArn`). */
    executionRoleArn: z.string().regex(/^arn:aws[a-z-]*:iam::\d{12}:role\/[\w+=,.@/-]+$/, "an IAM role ARN"),
    /** The Model Registry group whose approved packages start the rollout and record its outcome. */
    modelPackageGroupName: SageMakerName("model package group").optional(),
    /** Instance type of the candidate variant; default: the stable variant's. */
    instanceType: z.string().startsWith("ml.", "a SageMaker instance type (ml.*)").optional(),
    /** Instances of the candidate variant; default: the stable variant's. */
    initialInstanceCount: z.number().int().positive().optional(),
    /** Seconds an endpoint update (a new variant, a shadow, a promotion) may take before it fails. */
    progressDeadlineSeconds: WaitSeconds().default(1800),
    /** Seconds between readiness polls: endpoint updates take minutes. */
    pollSeconds: WaitSeconds().default(30),
    /** An MLflow tracking server that records the promoted version instead of the Model Registry. */
    mlflow: MlflowSettingsSchema.optional(),
    /**
     * Route through a model router (`functions/router`): `addRollout` deploys the router function
     * behind a Function URL, and the target writes its configuration (the variants, the weight,
     * the comparing mirror) instead of SageMaker's weights and shadow variants.
     */
    router: ModelRouterSettingsSchema.optional(),
  })
  .strict();

/** Any target's settings, discriminated by `type`. */
export const TargetSettingsSchema = z.discriminatedUnion("type", [
  AlbEcsSettingsSchema,
  LambdaAliasSettingsSchema,
  KubernetesSettingsSchema,
  SageMakerSettingsSchema,
  PluginSettingsSchema,
]);

export type AlbEcsSettings = z.infer<typeof AlbEcsSettingsSchema>;
export type LambdaAliasSettings = z.infer<typeof LambdaAliasSettingsSchema>;
export type SageMakerSettings = z.infer<typeof SageMakerSettingsSchema>;
export type PluginSettings = z.infer<typeof PluginSettingsSchema>;
export type TargetSettingsInput = z.input<typeof TargetSettingsSchema>;

/**
 * The problems of a target's settings, one `field.path: message` each (none: valid): what the
 * construct and `rollouts compile --target` both check before a target is embedded.
 */
export function targetSettingsProblems(settings: unknown): string[] {
  const parsed = TargetSettingsSchema.safeParse(settings);
  return parsed.success ? [] : issueLines(parsed.error);
}

/** Formats a zod error as `invalid WHAT: field.path: message; …` for errors that say what to fix. */
export function describeIssues(error: z.ZodError, what: string): string {
  return `invalid ${what}: ${formatIssues(error)}`;
}

/**
 * An adapter's settings parsed with its schema, as each adapter's constructor takes them: they
 * come from a Task's `Parameters`, so a bad field is a `TargetConfigurationError` naming it.
 */
export function parseTargetSettings<T extends z.ZodType>(
  schema: T,
  settings: unknown,
  what: string,
): z.infer<T> {
  const parsed = schema.safeParse(settings);
  if (!parsed.success) {
    throw new TargetConfigurationError(describeIssues(parsed.error, what), { cause: parsed.error });
  }
  return parsed.data;
}

/**
 * What each target can do beyond weights, decided when a spec is compiled for it (`rollouts
 * compile --target`, `addRollout`) so that a spec the target cannot run is refused before it is
 * deployed, never halfway through a rollout.
 *
 * - `mirrors`: mirroring needs something that copies requests: SageMaker's shadow variants (or its
 *   model router). An ALB forward action and a Lambda alias only split traffic; the kubernetes
 *   target's routers set weights and header routes, not Istio's or the Gateway API's mirror (not
 *   built). Whether a plugin can mirror is its own to say: one that cannot refuses the step when
 *   it runs.
 * - `scalesCanary`: `setCanaryScale` needs a candidate that runs pods apart from its weight: the
 *   kubernetes target's canary Deployment. ECS tasks, a Lambda alias's versions, SageMaker
 *   variants and plugins scale the candidate with the weight.
 * - `runsExperiments`: an `experiment` step runs ReplicaSets of the stable and the candidate's pod
 *   templates next to the rollout's own: the kubernetes target's. ECS services, Lambda versions,
 *   SageMaker variants and plugins have no pod template to start apart from the weight.
 * - `settles`: whether a rollout on this target polls readiness after the candidate starts and
 *   after each traffic step, as `addRollout` compiles it and `rollouts compile --target` by
 *   default: an ECS deployment and pods settle after each change, a SageMaker endpoint is Updating
 *   after every one; a Lambda alias shifts at once. A plugin's change is taken to be in effect
 *   when its call returns: only its candidate's start is polled.
 */
interface Capabilities {
  mirrors: boolean;
  scalesCanary: boolean;
  runsExperiments: boolean;
  settles: boolean;
}

const CAPABILITIES: Readonly<Record<TargetType, Capabilities>> = {
  "alb-ecs": { mirrors: false, scalesCanary: false, runsExperiments: false, settles: true },
  "lambda-alias": { mirrors: false, scalesCanary: false, runsExperiments: false, settles: false },
  kubernetes: { mirrors: false, scalesCanary: true, runsExperiments: true, settles: true },
  sagemaker: { mirrors: true, scalesCanary: false, runsExperiments: false, settles: true },
  plugin: { mirrors: true, scalesCanary: false, runsExperiments: false, settles: false },
};

/** The targets that can do `what`, as a message lists them (`targets that can: kubernetes`). */
function targetsThatCan(what: keyof Capabilities): string {
  return (Object.keys(CAPABILITIES) as TargetType[]).filter((t) => CAPABILITIES[t][what]).join(", ");
}

/** Whether the target of type `type` polls readiness after each traffic step (an unknown type: no). */
export function readinessChecksFor(type: unknown): boolean {
  return (
    typeof type === "string" && Object.hasOwn(CAPABILITIES, type) && CAPABILITIES[type as TargetType].settles
  );
}

/**
 * The steps of `spec` that the target of type `type` cannot run, one line each naming the step
 * (none: it can run them all). An unknown type is left to the settings' own validation.
 */
export function targetSpecProblems(type: unknown, spec: RolloutSpec): string[] {
  if (typeof type !== "string" || !Object.hasOwn(CAPABILITIES, type)) return [];
  const can = CAPABILITIES[type as TargetType];
  const problems: string[] = [];
  spec.steps.forEach((step, i) => {
    if (step.kind === "setCanaryScale" && !can.scalesCanary) {
      problems.push(
        `step ${i + 1}: setCanaryScale: the ${type} target scales the candidate with the weight ` +
          `(targets that can: ${targetsThatCan("scalesCanary")})`,
      );
    }
    if (step.kind === "experiment" && !can.runsExperiments) {
      problems.push(
        `step ${i + 1}: experiment ${step.templates.map((t) => t.name).join(", ")}: the ${type} target cannot run an experiment's ReplicaSets next to the rollout ` +
          `(targets that can: ${targetsThatCan("runsExperiments")})`,
      );
    }
    if (step.kind === "setMirrorRoute" && !can.mirrors) {
      problems.push(
        `step ${i + 1}: setMirrorRoute "${step.name}": the ${type} target cannot mirror requests ` +
          `(targets that can: ${targetsThatCan("mirrors")})`,
      );
    }
  });
  return problems;
}
