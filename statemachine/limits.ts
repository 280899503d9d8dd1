/**
 * The limits input must fit, in one place, each with the reason it is that number. Input past one
 * of them is refused when the files are loaded, with the field path, rather than failing later in
 * AWS (a definition Step Functions refuses, a wait that outlives its execution) or hanging the
 * loader. `docs/architecture.md` and the README's "The rollout spec" list them for users.
 */

/**
 * Bytes of one input file (1 MiB). A rollout spec with its templates is a few kilobytes, and
 * Kubernetes stores no object larger than about 1.5 MiB (etcd's limit). The parser's time is
 * bounded by {@link MAX_TOKENS}, not by this.
 */
export const MAX_FILE_BYTES = 1024 * 1024;

/**
 * Documents (and `kind: List` items) read from all the files of one load. A rollout needs one
 * Rollout and a few templates; a rendered manifest with every object of an application is a few
 * hundred. Past it, reading stops with a problem instead of growing without bound.
 */
export const MAX_DOCUMENTS = 1000;

/**
 * Levels of maps and lists inside each other in one document, aliases expanded. A pod template is
 * about ten levels deep; the YAML parser itself gives up near 780, and every recursive step after
 * it (hashing the pod template, the schemas) must stay far from the stack's end.
 */
export const MAX_DEPTH = 100;

/**
 * Alias expansions per anchor the YAML reader allows (the `yaml` package's `maxAliasCount`, at
 * its default): what stops an alias bomb ("billion laughs") before it expands.
 */
export const MAX_ALIAS_COUNT = 100;

/**
 * Values (scalars, maps and lists) in one document once its aliases are expanded. A large
 * rollout with its templates holds a few thousand; the bound keeps hashing and validating a
 * document (which see aliases expanded) in bounded time and memory.
 */
export const MAX_VALUES = 100_000;

/**
 * YAML tokens (scalars, keys, aliases, anchors, tags and the indicators `-` `:` `?` `{` `}` `[`
 * `]` `,`; not spaces, line breaks or comments) read from all the files of one load. A rollout with
 * its templates is a few hundred; a rendered manifest of a hundred objects, tens of thousands.
 * The reader counts them as the parser reads them and stops at the budget, so no input costs the
 * YAML parser more than this much work (about half a second on a busy machine), whatever its size or shape.
 */
export const MAX_TOKENS = 100_000;

/**
 * Collections the YAML parser may hold open at once. It nests one level per open map or list
 * (and a malformed block can open one per line), and recurses through them: past some thousands
 * it runs out of stack. Twice {@link MAX_DEPTH} stops it long before, while a document within
 * the depth limit never comes near.
 */
export const MAX_PARSER_DEPTH = 2 * MAX_DEPTH;

/** A Standard Step Functions execution lasts at most one year. */
const EXECUTION_MAX_SECONDS = 365 * 24 * 3600;

/**
 * The longest wait a rollout may have (a pause, an interval, an initial delay, a bake, a scale-down
 * delay, a progress deadline): a wait longer than its execution can last would never end. One year
 * is also far below what Step Functions' `TimeoutSeconds` (99,999,999 s) and EventBridge
 * Scheduler's `at()` accept.
 */
export const MAX_WAIT_SECONDS = EXECUTION_MAX_SECONDS;

/** Step Functions' largest `TimeoutSeconds` (and `Seconds` of a Wait state). */
export const TIMEOUT_SECONDS_MAX = 99_999_999;

/**
 * Step Functions' largest state machine definition, in characters (`CreateStateMachine`'s
 * `definition`).
 */
export const DEFINITION_MAX_CHARS = 1_048_576;

/**
 * Steps of one rollout. Each step adds at least 1,100 characters to the definition (a pause, the
 * smallest, about 1,170), so past about 950 steps no definition fits {@link DEFINITION_MAX_CHARS}:
 * the loader refuses more than a thousand before it resolves them, rather than compiling tens of
 * megabytes to find out.
 */
export const MAX_STEPS = 1000;

/** The longest Lambda function ARN, which a `${...FunctionArn}` placeholder becomes on deploy. */
export const FUNCTION_ARN_MAX_CHARS = 140;

/**
 * The analysis functions' timeout (the construct sets it): a measurement runs inside them, so a
 * provider's own timeout must end before they are stopped.
 */
export const ANALYSIS_FUNCTION_TIMEOUT_SECONDS = 60;

/**
 * The longest timeout a metric provider may ask for: the analysis function's timeout less ten
 * seconds to store the measurement and schedule the next tick.
 */
export const MAX_PROVIDER_TIMEOUT_SECONDS = ANALYSIS_FUNCTION_TIMEOUT_SECONDS - 10;

/**
 * The longest a provider's measurement may stay Running (a Kayenta canary execution not yet
 * complete): Argo resumes it for as long as it runs; here it is then an Error, so an analysis
 * step's wait has a bound a never-finishing execution cannot pass.
 */
export const MAX_RUNNING_MEASUREMENT_SECONDS = 600;

/**
 * Seconds of history a CloudWatch query may read: CloudWatch keeps metrics for 15 months (455
 * days), so a longer window reads nothing more.
 */
export const MAX_CLOUDWATCH_WINDOW_SECONDS = 455 * 24 * 3600;

/**
 * Pods (ECS tasks) of a rollout: ECS's quota of tasks per service (5,000), the largest target with
 * pods. Beyond it the plan's pod rounding describes a service that cannot exist.
 */
export const MAX_REPLICAS = 5000;

/**
 * Measurements kept per metric (`measurementRetention`): an analysis run, its kept measurements
 * included, is one DynamoDB item, and an item holds at most 400 KB.
 */
export const MAX_MEASUREMENT_RETENTION = 100;

/** What a field past one of the limits above is told, in the project's words. */
export const LIMIT_MESSAGES = {
  wait: `must be at most ${MAX_WAIT_SECONDS} seconds (a year): a rollout's Step Functions execution lasts at most a year, so a longer wait would never end`,
  replicas: `must be at most ${MAX_REPLICAS}: ECS runs at most 5,000 tasks per service, the largest target with pods`,
  providerTimeout: `must be at most ${MAX_PROVIDER_TIMEOUT_SECONDS} seconds: a measurement runs inside the analysis function, which stops after ${ANALYSIS_FUNCTION_TIMEOUT_SECONDS}`,
  cloudWatchWindow: `must be at most ${MAX_CLOUDWATCH_WINDOW_SECONDS} seconds (455 days): CloudWatch keeps metrics for 15 months`,
  retention: `must be at most ${MAX_MEASUREMENT_RETENTION}: an analysis run and the measurements it keeps are one DynamoDB item (400 KB at most)`,
} as const;
