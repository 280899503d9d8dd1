import { DesignInputError } from "../../statemachine/design/input.ts";
import {
  MODEL_POWER,
  MODEL_SIGNALS,
  type ModelPlan,
  type ModelSignal,
  modelPlan,
  type SignalName,
} from "../../statemachine/design/model.ts";
import { yamlDocuments } from "../../statemachine/design/yaml.ts";
import { formatDuration, parseDuration } from "../../statemachine/duration.ts";
import { rolloutNameProblem } from "../../statemachine/names.ts";
import type { DesignOptions } from "../commands/design-actions.ts";
import { Exit, type Io } from "../io.ts";
import { columns } from "../table.ts";
import { printable, printableJson } from "../terminal.ts";
import { durationFlag, required } from "./options.ts";
import { wrap } from "./render.ts";

/**
 * `rollouts design --model`: a model rollout's plan from the traffic, the quality signals, how late
 * each arrives, their rates today and the smallest degradation that matters.
 */

const SIGNALS = Object.keys(MODEL_SIGNALS) as SignalName[];

function signalName(flag: string, text: string): SignalName {
  if (!(SIGNALS as string[]).includes(text)) {
    throw new DesignInputError(`${flag}: "${text}" is not a signal: use ${SIGNALS.join(", ")}`);
  }
  return text as SignalName;
}

/** `name=x` pairs of a repeatable flag, each x a share in (0, 1); a bare x (with `bare`) applies to every signal. */
function pairs(flag: string, values: readonly string[], bare: boolean): Map<SignalName | "*", number> {
  const out = new Map<SignalName | "*", number>();
  for (const value of values) {
    const [left, right] = value.includes("=") ? value.split("=", 2) : ["*", value];
    const x = Number(right);
    if (!/^\s*(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?\s*$/.test(right ?? "") || !(x > 0 && x < 1)) {
      throw new DesignInputError(
        `${flag} must be ${bare ? "[NAME=]" : "NAME="}X with X a share above 0 and under 1, got "${value}"`,
      );
    }
    if (left === "*" && !bare)
      throw new DesignInputError(`${flag} must be NAME=X (feedback=0.05), got "${value}"`);
    out.set(left === "*" ? "*" : signalName(flag, left as string), x);
  }
  return out;
}

/** The signals of `--signal NAME:DELAY`, with their baselines and min effects. */
export function signalsOf(opts: Pick<DesignOptions, "signal" | "baseline" | "minEffect">): ModelSignal[] {
  const baselines = pairs("--baseline", opts.baseline, false);
  const effects = pairs("--min-effect", opts.minEffect, true);
  return opts.signal.map((text) => {
    const match = /^([a-z]+):(.+)$/.exec(text);
    if (!match)
      throw new DesignInputError(`--signal must be NAME:DELAY (feedback:10m, errors:0s), got "${text}"`);
    const name = signalName("--signal", match[1] as string);
    const delay = parseDuration(match[2]);
    if ("error" in delay) throw new DesignInputError(`--signal ${text}: ${delay.error}`);
    const baseline = baselines.get(name);
    if (MODEL_SIGNALS[name].needsBaseline && baseline === undefined) {
      throw new DesignInputError(`--baseline ${name}=RATE is required: the ${name} signal's rate today`);
    }
    const minEffect = effects.get(name) ?? effects.get("*");
    if (minEffect === undefined) {
      throw new DesignInputError(
        `--min-effect is required for ${name}: the smallest degradation that matters (--min-effect 0.02 or ${name}=0.02)`,
      );
    }
    if (baseline !== undefined && baseline + (name === "disagreement" ? 2 : 1) * minEffect >= 1) {
      throw new DesignInputError(
        `--min-effect ${name}: ${baseline} worsened by ${minEffect} leaves the 0–1 range`,
      );
    }
    return { name, delaySeconds: delay.seconds, ...(baseline !== undefined ? { baseline } : {}), minEffect };
  });
}

const n = (x: number) => (Number.isFinite(x) ? Math.round(x).toLocaleString("en-US") : "∞");
const time = (s: number) => (Number.isFinite(s) ? formatDuration(s) : "never");

/** The plan's lines (without the comment marks). */
export function modelLines(plan: ModelPlan, rps: number): string[] {
  const signals = columns(
    [
      "signal",
      "delay",
      "on the shadow",
      "rate today",
      "min effect",
      `samples (alpha ${plan.alpha}, power ${MODEL_POWER})`,
    ],
    plan.samples.map((s) => [
      s.signal.name,
      formatDuration(s.signal.delaySeconds),
      MODEL_SIGNALS[s.signal.name].shadow ? "yes" : "no",
      s.signal.baseline === undefined ? "p95" : String(s.signal.baseline),
      s.signal.name === "latency" ? `${s.signal.minEffect * 100}% slower` : `+${s.signal.minEffect}`,
      `${n(s.samples)} ${s.test === "one-proportion" ? "(candidate)" : "per side"}`,
    ]),
  );
  const steps = columns(
    ["step", "template", "judges", "samples", "time to a decision"],
    plan.steps.map((s) => [
      s.kind === "shadow" ? "shadow: 100% mirrored" : `canary: ${s.weight}% of the users`,
      s.signals.length > 0 ? s.templateName : "-",
      s.signals.map((x) => x.name).join(", ") || "-",
      s.signals.map((x) => n(x.samples)).join(", ") || "-",
      `${time(s.decisionSeconds)} (${s.signals.map((x) => `${x.name} ${time(x.decisionSeconds)}`).join(", ") || "nothing judges it"})`,
    ]),
  );
  const total = plan.steps.reduce((a, s) => a + s.decisionSeconds, 0);
  return [
    `rollouts design --model: ${n(rps)} rps`,
    ...signals,
    "",
    ...wrap(`shadow: ${plan.shadow.worth ? "worth it" : "not worth it"}: ${plan.shadow.why}`),
    ...steps,
    ...wrap(
      `a good model is promoted after about ${time(total)}; the registry's alias moves at promotion (the target's modelPackageGroupName)`,
    ),
    "",
    `router (addRollout's target): ${JSON.stringify(plan.target)}`,
    ...plan.warnings.flatMap((w) => wrap(`note: ${w}`)),
  ];
}

/** `rollouts design --model`: prints the plan and its YAML, or its JSON. */
export function modelAction(io: Io, opts: DesignOptions): number {
  const rps = required("--rps", opts.rps, "the traffic the model serves");
  const problem = rolloutNameProblem(opts.name);
  if (problem) throw new DesignInputError(`--name: ${problem}`);
  const signals = signalsOf(opts);
  const maxDurationSeconds = durationFlag("--max-duration", opts.maxDuration, 1, 365 * 86_400);
  const plan = modelPlan({ name: opts.name, rps, signals, maxDurationSeconds });
  const yaml = yamlDocuments([{ value: plan.rollout }, ...plan.templates.map((value) => ({ value }))]);
  if (opts.json) {
    io.out(printableJson({ kind: "model", rps, ...plan, yaml }, 2));
    return Exit.ok;
  }
  const comments = modelLines(plan, rps).map((line) => (line === "" ? "#" : `# ${line}`));
  io.out(printable(`${comments.join("\n")}\n---\n${yaml}`, { multiline: true }));
  return Exit.ok;
}
