import { z } from "zod";
import type { Origin } from "./analysis-resolve.ts";
import { formatDuration, parseDuration } from "./duration.ts";
import { LIMIT_MESSAGES, MAX_WAIT_SECONDS } from "./limits.ts";
import { effectiveScale } from "./pods.ts";
import type { Problem } from "./problems.ts";
import type { RolloutSpec, Step } from "./spec.ts";

/**
 * Waves: one release shipped one region (or account) at a time. A wave is a set of targets, each
 * a region (and optionally an account) with its own controller and traffic target; a wave's
 * targets run one after the other, each the whole rollout (candidate, testers, steps, gates,
 * promotion) before the next. The spec names the waves and how they pick their targets; the
 * deployment (the construct, the embedded runtime) gives the targets themselves, with their
 * traffic and their state machines, and `resolveWaves` matches the two.
 */

/** How many waves a release may have, and targets in all: each target is a state of the coordinator. */
export const MAX_WAVES = 20;
export const MAX_WAVE_TARGETS = 50;

/** A wave's name, as it appears in stage names (`eu/25%`) and state names: a short DNS label. */
const WAVE_NAME = /^[a-z0-9]([a-z0-9-]{0,18}[a-z0-9])?$/;

const Region = z
  .string()
  .regex(/^[a-z]{2}(-[a-z]+)+-\d+$|^[a-z0-9-]{1,32}$/, "a region name such as eu-west-1");
const Account = z.string().regex(/^\d{12}$/, "a 12-digit AWS account id");

/** One label condition of a selector: `region=eu-west-1`, `tier!=canary`. */
export const SelectorTermSchema = z
  .object({ key: z.string().min(1), op: z.enum(["=", "!="]), value: z.string() })
  .strict();

export const WaveTargetRefSchema = z.object({ region: Region, account: Account.optional() }).strict();

/** One wave after normalization. */
export const WaveSchema = z
  .object({
    name: z.string().regex(WAVE_NAME),
    /** Targets named one by one, in this order. */
    targets: z.array(WaveTargetRefSchema).min(1).optional(),
    /** Or every target whose labels (with `region` and `account`) match all the terms, in the deployment's order. */
    select: z.array(SelectorTermSchema).min(1).optional(),
    /** Wait for a person (`rollouts promote` on the next wave's first target) before the next wave. */
    approval: z.boolean().default(false),
    /** Seconds to wait after this wave before the next. */
    bakeSeconds: z.number().nonnegative().max(MAX_WAIT_SECONDS, LIMIT_MESSAGES.wait).default(0),
  })
  .strict();

/** What a failed target does to the release. */
export const WaveFailureSchema = z.enum(["rollback-wave", "rollback-all", "stop"]);

export const WavesSpecSchema = z
  .object({
    /**
     * `rollback-wave` (and `rollback`, its single-target meaning): the failed target returns to its stable version (its own rollout aborts) and
     * the release stops; `rollback-all`: the targets already promoted return to the version they
     * had, in reverse order, too; `stop`: the failed target's weights stay, for a person.
     */
    onFailure: WaveFailureSchema.default("rollback-wave"),
    list: z.array(WaveSchema).min(1).max(MAX_WAVES),
  })
  .strict();

export type Wave = z.infer<typeof WaveSchema>;
export type WavesSpec = z.infer<typeof WavesSpecSchema>;
export type WaveFailure = z.infer<typeof WaveFailureSchema>;
export type SelectorTerm = z.infer<typeof SelectorTermSchema>;

/** How a wave is written, in the native form and in the native reference's descriptor layout. */
const WaveInputSchema = z
  .object({
    name: z.string(),
    targets: z
      .array(z.union([z.string(), z.object({ region: z.string(), account: z.string().optional() }).strict()]))
      .min(1)
      .optional(),
    select: z.string().optional(),
    /** One pass per region: every target already is one, so only `region` is read. */
    by: z
      .literal("region", { error: 'only "region": each target of a wave is one region (or account)' })
      .optional(),
    bake: z.union([z.number(), z.string()]).optional(),
  })
  .strict();

/** `region=eu-west-1,tier!=canary` as terms; a problem message when it is not one. */
export function parseSelector(text: string): SelectorTerm[] | string {
  const terms: SelectorTerm[] = [];
  for (const part of text.split(",")) {
    const m = /^\s*([A-Za-z0-9._/-]+)\s*(!=|==|=)\s*([A-Za-z0-9._-]*)\s*$/.exec(part);
    if (!m)
      return `"${part.trim()}" is not a label condition: write key=value or key!=value, joined by commas`;
    terms.push({ key: m[1] as string, op: m[2] === "!=" ? "!=" : "=", value: m[3] as string });
  }
  return terms;
}

/**
 * Reads the `waves` field (and the wave names of `approvalsBetween`) into a WavesSpec; problems
 * name `path` and the wave. Returns undefined when there are problems.
 */
export function normalizeWaves(
  raw: unknown,
  input: {
    approvals: readonly string[];
    onFailure: string;
    origin: Origin;
    path: string;
    problems: Problem[];
  },
): WavesSpec | undefined {
  const { origin, path, problems } = input;
  const before = problems.length;
  const list = z.array(z.unknown()).min(1).max(MAX_WAVES).safeParse(raw);
  if (!list.success) {
    problems.push({
      ...origin,
      path,
      message: `a list of 1 to ${MAX_WAVES} waves, each {name, targets | select}`,
    });
    return undefined;
  }
  const waves: Wave[] = [];
  /** Where each normalized wave is in the list as written. */
  const written: number[] = [];
  const names = new Set<string>();
  list.data.forEach((item, i) => {
    const wave = readWave(item, `${path}[${i}]`, names, origin, problems);
    if (!wave) return;
    written.push(i);
    waves.push(wave);
  });
  markApprovals(waves, input.approvals, origin, problems);
  const last = waves.at(-1);
  if (last && last.bakeSeconds > 0) {
    problems.push({
      ...origin,
      path: `${path}[${written.at(-1)}].bake`,
      message: "the last wave has no wave after it to bake before",
    });
  }
  const onFailure =
    input.onFailure === "stop"
      ? "stop"
      : input.onFailure === "rollback-all"
        ? "rollback-all"
        : "rollback-wave";
  if (problems.length !== before) return undefined;
  return { onFailure, list: waves };
}

type WaveInput = z.infer<typeof WaveInputSchema>;

/**
 * One wave as written at `at`: its name (once in `names`), its targets or its selector, and its
 * bake. Undefined when it cannot be read at all; a problem in one of its fields is reported and the
 * wave still counts, so that the waves after it keep their place.
 */
function readWave(
  item: unknown,
  at: string,
  names: Set<string>,
  origin: Origin,
  problems: Problem[],
): Wave | undefined {
  const parsed = WaveInputSchema.safeParse(item);
  if (!parsed.success) {
    for (const issue of parsed.error.issues) {
      const sub = issue.path.map((p) => (typeof p === "number" ? `[${p}]` : `.${String(p)}`)).join("");
      const message =
        issue.code === "unrecognized_keys"
          ? `unknown field${issue.keys.length > 1 ? "s" : ""} ${issue.keys.map((k) => `"${k}"`).join(", ")}`
          : issue.message;
      problems.push({ ...origin, path: `${at}${sub}`, message });
    }
    return undefined;
  }
  const w = parsed.data;
  if (!WAVE_NAME.test(w.name)) {
    problems.push({
      ...origin,
      path: `${at}.name`,
      message: `"${w.name}" is not a wave name: up to 20 lowercase letters, digits and "-", starting and ending with a letter or digit`,
    });
  } else if (names.has(w.name)) {
    problems.push({ ...origin, path: `${at}.name`, message: `wave "${w.name}" is named twice` });
  }
  names.add(w.name);
  if ((w.targets === undefined) === (w.select === undefined)) {
    problems.push({
      ...origin,
      path: at,
      message:
        "a wave needs either targets (regions, or {region, account}) or select (label conditions), not both",
    });
    return undefined;
  }
  const targets = w.targets ? waveTargets(w.targets, at, origin, problems) : undefined;
  let select: SelectorTerm[] | undefined;
  if (w.select !== undefined) {
    const terms = parseSelector(w.select);
    if (typeof terms === "string") problems.push({ ...origin, path: `${at}.select`, message: terms });
    else select = terms;
  }
  return {
    name: w.name,
    ...(targets ? { targets } : {}),
    ...(select ? { select } : {}),
    approval: false,
    bakeSeconds: waveBake(w, at, origin, problems),
  };
}

/** A wave's targets, a region alone or `{region, account}`; the ones that are not valid are reported. */
function waveTargets(
  written: NonNullable<WaveInput["targets"]>,
  at: string,
  origin: Origin,
  problems: Problem[],
): NonNullable<Wave["targets"]> {
  const targets: NonNullable<Wave["targets"]> = [];
  written.forEach((t, j) => {
    const ref = typeof t === "string" ? { region: t } : t;
    const ok = WaveTargetRefSchema.safeParse(ref);
    if (!ok.success) {
      for (const issue of ok.error.issues) {
        problems.push({
          ...origin,
          path: `${at}.targets[${j}]${typeof t === "string" ? "" : `.${issue.path.join(".")}`}`,
          message: issue.message,
        });
      }
    } else targets.push(ok.data);
  });
  return targets;
}

/** Seconds of bake after a wave (0 without one), within the longest wait an execution allows. */
function waveBake(w: WaveInput, at: string, origin: Origin, problems: Problem[]): number {
  if (w.bake === undefined) return 0;
  const d = parseDuration(w.bake);
  if ("error" in d) problems.push({ ...origin, path: `${at}.bake`, message: d.error });
  else if (d.seconds > MAX_WAIT_SECONDS)
    problems.push({ ...origin, path: `${at}.bake`, message: LIMIT_MESSAGES.wait });
  else return d.seconds;
  return 0;
}

/** The waves named in approvalsBetween wait for a person after them; the last wave has none after it. */
function markApprovals(
  waves: Wave[],
  approvals: readonly string[],
  origin: Origin,
  problems: Problem[],
): void {
  const last = waves.at(-1)?.name;
  for (const a of approvals) {
    const wave = waves.find((w) => w.name === a);
    if (!wave) continue;
    if (a === last) {
      problems.push({
        ...origin,
        path: "approvalsBetween",
        message: `"${a}" is the last wave: an approval between waves needs a wave after it`,
      });
    } else wave.approval = true;
  }
}

/** One target of the deployment: a region (and account) with its own controller and traffic. */
export interface DeployedTarget {
  region: string;
  account?: string;
  /** Labels a wave's `select` reads, besides `region` and `account`. */
  labels?: Readonly<Record<string, string>>;
}

/** One pass of a release: a target of a wave, in the order the release runs them. */
export interface WavePass<T extends DeployedTarget = DeployedTarget> {
  /** The wave's name, or `<wave>-<region>` when the wave has several targets: what stages carry. */
  pass: string;
  wave: string;
  /** Index of the target in the deployment's list. */
  index: number;
  target: T;
  /** A person approves before this pass (the first of a wave that follows a wave in approvalsBetween). */
  approvalBefore: boolean;
  /** Seconds to wait before this pass (the bake of the wave before). */
  bakeBefore: number;
}

const labelsOf = (t: DeployedTarget): Record<string, string> => ({
  ...(t.labels ?? {}),
  region: t.region,
  ...(t.account ? { account: t.account } : {}),
});

const matches = (t: DeployedTarget, terms: readonly SelectorTerm[]) =>
  terms.every((term) => (labelsOf(t)[term.key] === term.value) === (term.op === "="));

const describeTarget = (t: { region: string; account?: string | undefined }) =>
  t.account ? `${t.account}/${t.region}` : t.region;

/**
 * The passes of a release, in order: each wave's targets matched against the deployment's. A
 * wave that matches nothing, a target named by no wave or by two, and a named target the
 * deployment does not have are problems (messages only: the caller says where).
 */
export function resolveWaves<T extends DeployedTarget>(
  waves: WavesSpec,
  deployed: readonly T[],
): { passes: WavePass<T>[]; problems: string[] } {
  const problems: string[] = [];
  const taken = new Map<number, string>();
  const passes: WavePass<T>[] = [];
  let approvalBefore = false;
  let bakeBefore = 0;
  waves.list.forEach((wave, w) => {
    let indexes: number[] = [];
    if (wave.targets) {
      for (const ref of wave.targets) {
        const found = deployed.findIndex(
          (t) => t.region === ref.region && (ref.account === undefined || t.account === ref.account),
        );
        if (found < 0) problems.push(`waves[${w}] (${wave.name}): no target in ${describeTarget(ref)}`);
        else indexes.push(found);
      }
    } else if (wave.select) {
      indexes = deployed.flatMap((t, i) => (matches(t, wave.select ?? []) ? [i] : []));
      if (indexes.length === 0) {
        const text = wave.select.map((s) => `${s.key}${s.op}${s.value}`).join(",");
        problems.push(`waves[${w}] (${wave.name}): select "${text}" matches no target`);
      }
    }
    indexes.forEach((index, k) => {
      const target = deployed[index] as T;
      const other = taken.get(index);
      if (other !== undefined) {
        problems.push(
          `waves[${w}] (${wave.name}): the target in ${describeTarget(target)} is already in wave ${other}`,
        );
        return;
      }
      taken.set(index, wave.name);
      const pass = indexes.length === 1 ? wave.name : `${wave.name}-${target.region}`;
      passes.push({
        pass,
        wave: wave.name,
        index,
        target,
        approvalBefore: k === 0 && approvalBefore,
        bakeBefore: k === 0 ? bakeBefore : 0,
      });
    });
    approvalBefore = wave.approval;
    bakeBefore = wave.bakeSeconds;
  });
  deployed.forEach((t, i) => {
    if (!taken.has(i)) problems.push(`the target in ${describeTarget(t)} is in no wave: add it to one`);
  });
  const seen = new Set<string>();
  for (const p of passes) {
    if (seen.has(p.pass)) problems.push(`two passes are named "${p.pass}": give each target its own region`);
    seen.add(p.pass);
  }
  if (passes.length > MAX_WAVE_TARGETS)
    problems.push(`${passes.length} targets: at most ${MAX_WAVE_TARGETS} in one release`);
  return { passes, problems };
}

/**
 * The rollout one pass runs, on its own controller: the release's steps, an approval first when
 * the wave before asked for one (after the candidate is deployed, before any traffic moves), its
 * stages named after the pass, and `onFailure: stop` kept (every rollback leaves the failed target
 * on its stable version; the coordinator decides about the others). A background analysis starts
 * with the same step of the release as without the approval (its `startingStep` moves with it).
 */
export function passSpec(spec: RolloutSpec, pass: Pick<WavePass, "pass" | "approvalBefore">): RolloutSpec {
  const { waves, ...rest } = spec;
  const approval: Step[] = pass.approvalBefore ? [{ kind: "pause", reason: "Approval" }] : [];
  return {
    ...rest,
    pass: pass.pass,
    onFailure: waves?.onFailure === "stop" || spec.onFailure === "stop" ? "stop" : "rollback",
    steps: [...approval, ...spec.steps],
    ...(spec.backgroundAnalysis
      ? {
          backgroundAnalysis: {
            ...spec.backgroundAnalysis,
            startingStep: spec.backgroundAnalysis.startingStep + approval.length,
          },
        }
      : {}),
  };
}

/** The pass a stage's label names (`eu` of `eu/25%`); undefined for a stage of a rollout alone. */
export function passOfStage(label: string): string | undefined {
  return /^([a-z0-9-]+)\//.exec(label)?.[1];
}

/** `eu/25%`, `eu/analysis: health`: a stage of a pass, as `rollouts get` and the plan show it. */
export function passStageLabel(pass: string, detail: string): string {
  const weight = /^setWeight: (\d+)$/.exec(detail);
  return `${pass}/${weight ? `${weight[1]}%` : detail}`;
}

/**
 * `traffic@25@eu`, `pause@10m@eu`, `approval@us`: a step of a pass as its lifecycle events name
 * it (the native reference's joined step name: what the step does, its value, the wave).
 */
export function passStepName(pass: string, step: Step): string {
  const kind = ((): string => {
    switch (step.kind) {
      case "setWeight":
        return `traffic@${step.weight}`;
      case "pause":
        if (step.reason === "Approval") return "approval";
        return step.duration !== undefined ? `pause@${formatDuration(step.duration)}` : "pause";
      case "analysis":
        return "analysis";
      case "experiment":
        return `experiment@${step.templates.map((t) => t.name).join("+")}`;
      case "setMirrorRoute":
        return `mirror@${step.name}`;
      case "setHeaderRoute":
        return `header@${step.name}`;
      case "preview":
        return "preview";
      case "setCanaryScale": {
        const scale = effectiveScale(step);
        if (scale?.replicas !== undefined) return `scale@${scale.replicas}`;
        return scale?.weight !== undefined ? `scale@${scale.weight}%` : "scale@traffic";
      }
    }
  })();
  return `${kind}@${pass}`;
}

/** One line per wave, in order: what it reaches and what comes after it (`rollouts plan`). */
export function describeWaves(waves: WavesSpec): string[] {
  return waves.list.map((w, i) => {
    const reach = w.targets
      ? w.targets.map(describeTarget).join(", ")
      : `select ${(w.select ?? []).map((t) => `${t.key}${t.op}${t.value}`).join(",")}`;
    const after = [
      ...(w.bakeSeconds > 0 ? [`a ${formatDuration(w.bakeSeconds)} bake`] : []),
      ...(w.approval ? ["an approval (rollouts promote on the next wave's first target)"] : []),
    ];
    return `${i + 1}  ${w.name}: ${reach}${after.length > 0 ? `; then ${after.join(", then ")}` : ""}`;
  });
}
