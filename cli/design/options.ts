import { parse } from "yaml";
import {
  type DesignInput,
  DesignInputError,
  defaultExposureBudget,
  type MetricNames,
  metricNamesOf,
  ROUTERS,
  type Router,
  SIMULATOR_METRICS,
} from "../../statemachine/design/input.ts";
import { parseDuration } from "../../statemachine/duration.ts";
import { MAX_ALIAS_COUNT } from "../../statemachine/limits.ts";
import { readSources } from "../../statemachine/load.ts";
import { rolloutNameProblem } from "../../statemachine/names.ts";
import { formatProblem, type Problem } from "../../statemachine/problems.ts";
import type { DesignOptions } from "../commands/design-actions.ts";

/**
 * `rollouts design`'s options as a design's input: each flag checked, and named when it is wrong
 * (exit 2).
 */

/** A flag's duration as whole seconds within [min, max]. */
export function durationFlag(flag: string, value: string, min: number, max: number): number {
  const parsed = parseDuration(value);
  if ("error" in parsed) throw new DesignInputError(`${flag}: ${parsed.error}`);
  if (!Number.isInteger(parsed.seconds) || parsed.seconds < min || parsed.seconds > max) {
    throw new DesignInputError(`${flag} must be whole seconds from ${min}s to ${max}s, got "${value}"`);
  }
  return parsed.seconds;
}

/** A flag the command needs, or a problem naming it. */
export function required<T>(flag: string, value: T | undefined, why: string): T {
  if (value === undefined) throw new DesignInputError(`${flag} is required: ${why}`);
  return value;
}

/** The `--metrics` file's names, read within the loader's limits. */
async function metricsOf(file: string | undefined): Promise<MetricNames> {
  if (file === undefined) return SIMULATOR_METRICS;
  const problems: Problem[] = [];
  const [source] = await readSources([file], problems);
  if (!source) throw new DesignInputError(problems.map((p) => `--metrics ${formatProblem(p)}`).join("\n"));
  let value: unknown;
  try {
    value = parse(source.text, { maxAliasCount: MAX_ALIAS_COUNT });
  } catch (error) {
    throw new DesignInputError(`--metrics ${file}: not YAML or JSON: ${(error as Error).message}`);
  }
  return metricNamesOf(value, file);
}

/** The design's input from the options; `budgetGiven` says whether the budget is the user's or the default. */
export async function designInputOf(
  opts: DesignOptions,
): Promise<{ input: DesignInput; budgetGiven: boolean }> {
  const rps = required("--rps", opts.rps, "the traffic the design is for");
  const sloErrorRate = required("--slo-error-rate", opts.sloErrorRate, "the SLO's share of failed requests");
  const sloP95Ms = required("--slo-p95", opts.sloP95, "the SLO's 95th percentile, in milliseconds");
  if (!(ROUTERS as readonly string[]).includes(opts.router)) {
    throw new DesignInputError(`--router must be one of ${ROUTERS.join(", ")}, got "${opts.router}"`);
  }
  const problem = rolloutNameProblem(opts.name);
  if (problem) throw new DesignInputError(`--name: ${problem}`);
  const input: DesignInput = {
    name: opts.name,
    rps,
    sloErrorRate,
    sloP95Ms,
    baselineErrorRate: opts.baselineErrorRate ?? sloErrorRate / 10,
    replicas: opts.replicas,
    router: opts.router as Router,
    metrics: await metricsOf(opts.metrics),
    exposureBudget: opts.exposureBudget ?? defaultExposureBudget(rps),
    maxDurationSeconds: durationFlag("--max-duration", opts.maxDuration, 1, 86_400),
    scrapeIntervalSeconds: durationFlag("--scrape-interval", opts.scrapeInterval, 1, 600),
  };
  return { input, budgetGiven: opts.exposureBudget !== undefined };
}
