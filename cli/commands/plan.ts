import type { Command } from "commander";
import {
  formatDuration,
  LIMIT_MESSAGES,
  MAX_REPLICAS,
  type PlanStep,
  plan,
} from "../../statemachine/index.ts";
import { Exit, type RegisterCommand, UsageError } from "../io.ts";
import { columns } from "../table.ts";
import { printable, printableJson } from "../terminal.ts";
import { loadSpecOrReport } from "./spec-input.ts";

const positiveNumber = (flag: string) => (value: string) => {
  const n = Number(value);
  if (!Number.isFinite(n) || n < 0) throw new UsageError(`${flag} must be a number >= 0, got "${value}"`);
  return n;
};

/** `rollouts plan FILE... [--replicas N] [--rps R] [--json]`: the steps, pods and exposure before a rollout runs. */
export const registerPlan: RegisterCommand = (program: Command, io, done) => {
  program
    .command("plan")
    .description(
      "show each step: weight, canary and stable pods, the real share, the analysis, requests per second",
    )
    .argument("<file...>", "Rollout and AnalysisTemplate files (YAML or JSON), or a native spec")
    .option("--replicas <n>", "override the replica count", positiveNumber("--replicas"))
    .option("--rps <r>", "requests per second in front of the rollout", positiveNumber("--rps"))
    .option("--json", "print the plan as JSON")
    .action(async (files: string[], opts: { replicas?: number; rps?: number; json?: boolean }) => {
      const spec = await loadSpecOrReport(files, io);
      if (!spec) return done(Exit.badInput);
      if (opts.replicas !== undefined && !Number.isInteger(opts.replicas)) {
        throw new UsageError(`--replicas must be a whole number, got ${opts.replicas}`);
      }
      if (opts.replicas !== undefined && opts.replicas > MAX_REPLICAS) {
        throw new UsageError(`--replicas ${LIMIT_MESSAGES.replicas}`);
      }
      const result = plan(opts.replicas === undefined ? spec : { ...spec, replicas: opts.replicas }, {
        ...(opts.rps !== undefined ? { rps: opts.rps } : {}),
      });
      if (opts.json) {
        io.out(printableJson(result, 2));
        return done(Exit.ok);
      }
      io.out(
        `rollout ${result.name} (revision ${result.revision}): ${result.strategy}, ${result.replicas} replicas, ${
          result.trafficRouting ? "exact weights (traffic router)" : "whole pods behind one Service"
        }`,
      );
      // Details quote the files (queries, names): printed without their control characters.
      io.out(printable(table(result.steps, opts.rps !== undefined), { multiline: true }));
      if (result.backgroundAnalysis) {
        io.out(`background analysis from step ${result.backgroundAnalysis.startingStep}:`);
        for (const line of result.backgroundAnalysis.analysis) io.out(printable(`    ${line}`));
      }
      done(Exit.ok);
    });
};

function table(steps: PlanStep[], withRps: boolean): string {
  const header = ["#", "step", "weight", "canary", "stable", "share", ...(withRps ? ["rps"] : [])];
  const rows = steps.map((s) => [
    String(s.index),
    s.detail,
    `${s.weight}%`,
    String(s.canaryPods),
    String(s.stablePods),
    `${s.share}%`,
    ...(withRps ? [String(s.candidateRps ?? 0)] : []),
  ]);
  const [head = "", ...lines] = columns(header, rows);
  const out = [head];
  steps.forEach((s, i) => {
    out.push(lines[i] ?? "");
    for (const a of s.analysis ?? []) out.push(`    ${a}`);
    for (const g of s.gates ?? []) {
      if (g.samplesNeeded === undefined || g.secondsToSamples === undefined) continue;
      const time =
        g.secondsToSamples < 0 ? "never (no traffic)" : `in ${formatDuration(Math.ceil(g.secondsToSamples))}`;
      const last =
        g.lastLookSeconds === undefined ? "" : `; last look at ${formatDuration(g.lastLookSeconds)}`;
      out.push(
        `    ${g.metric}: ${g.samplesNeeded} samples${g.perSide ? " per side" : ""} ${time} at this share${last}`,
      );
    }
    if (s.warning) out.push(`    warning: ${s.warning}`);
  });
  return out.join("\n");
}
