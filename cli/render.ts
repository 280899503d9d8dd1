import { z } from "zod";
import { type GateSummary, gatesOf } from "../functions/analysis/judge-look.ts";
import { type AnalysisPhase, MeasurementSchema } from "../functions/analysis/types.ts";
import type { StoredMeasurement, StoredRun } from "../functions/store/port.ts";
import type { Revision, RolloutEvent, RolloutItem, RolloutPhase } from "../functions/store/schema.ts";
import type { StoredAnalysis } from "../functions/workflow/analysis.ts";
import { passOfStage } from "../statemachine/waves.ts";
import { columns } from "./table.ts";
import { printable } from "./terminal.ts";

/**
 * How `rollouts get`, `list` and `status` draw a rollout, as pure functions of what the store
 * holds (item + runs + measurements) and the time: no AWS, so every frame is unit-testable and
 * `--watch` can compare frames to redraw only on change. Every line is passed through
 * `printable`: what the store holds (reasons, messages, values, names) never reaches the
 * terminal with its escape sequences or control characters.
 */

/** A measurement as an analysis tick stores it: the engine's measurement plus its metric name. */
export const StoredMeasurementValueSchema = MeasurementSchema.extend({ metric: z.string() });
export type StoredMeasurementValue = z.infer<typeof StoredMeasurementValueSchema>;

/** Everything one frame of `rollouts get` shows. */
export interface RolloutView {
  item: RolloutItem;
  /** The rollout's runs (any execution); the frame shows those of the current execution. */
  runs: StoredRun<StoredAnalysis>[];
  /** Measurements by run id (only the runs that are shown need to be here). */
  measurements: Record<string, StoredMeasurement<StoredMeasurementValue>[]>;
}

/** Argo's icons, so a person who knows `kubectl argo rollouts get` reads this at a glance. */
export const PHASE_ICON: Record<RolloutPhase, string> = {
  Healthy: "✔",
  Progressing: "◌",
  Paused: "॥",
  Degraded: "✖",
};

const ANALYSIS_ICON: Record<AnalysisPhase, string> = {
  Pending: "◷",
  Running: "◌",
  Successful: "✔",
  Failed: "✖",
  Error: "⚠",
  Inconclusive: "?",
};

/** Measurements shown per metric: the last few are what a person compares with the condition. */
export const MEASUREMENTS_SHOWN = 3;
/** Events shown at the bottom of `rollouts get`, newest last. */
export const EVENTS_SHOWN = 8;

const LABEL_WIDTH = 17;
const field = (label: string, value: string) => `${`${label}:`.padEnd(LABEL_WIDTH)}${value}`;
const continuation = (value: string) => `${" ".repeat(LABEL_WIDTH)}${value}`;

/** Epoch ms as an ISO time to the second: stable across runs, unlike "5s ago". */
export function isoSeconds(ms: number): string {
  return new Date(ms).toISOString().replace(/\.\d{3}Z$/, "Z");
}

/** `Paused - CanaryPauseStep: waiting for rollouts promote`, as `kubectl argo rollouts status` prints it. */
export function statusLine(item: Pick<RolloutItem, "phase" | "message">): string {
  return printable(item.message ? `${item.phase} - ${item.message}` : item.phase);
}

/**
 * The events of the execution driving the rollout now: those after its `RolloutUpdated` (Begin
 * writes it first). Older executions' step events must not mark this execution's steps.
 */
export function currentEvents(item: Pick<RolloutItem, "events">): RolloutEvent[] {
  let start = 0;
  item.events.forEach((event, i) => {
    if (event.type === "RolloutUpdated") start = i;
  });
  return item.events.slice(start);
}

/**
 * The zero-based step the rollout is at. `stepIndex` only moves when a traffic step completes, so
 * during a pause or an analysis that follows another wait it lags: the newest step an event of
 * this execution names is the better answer, and the larger of the two is right in both cases.
 */
export function currentStepOf(item: RolloutItem): number {
  if (item.phase === "Healthy") return item.stepCount;
  const named = currentEvents(item)
    .map((e) => e.step)
    .filter((s): s is number => s !== undefined);
  return Math.min(item.stepCount, Math.max(item.stepIndex, ...named));
}

/**
 * Argo names strategies in CamelCase. Begin records the strategy; an item written before it did
 * is known only by a pause that belongs to one strategy.
 */
export function inferStrategy(item: RolloutItem): "Canary" | "BlueGreen" | undefined {
  if (item.strategy) return item.strategy === "blueGreen" ? "BlueGreen" : "Canary";
  if (item.pause?.reason === "BlueGreenPause") return "BlueGreen";
  if (item.pause?.reason === "CanaryPauseStep") return "Canary";
  return undefined;
}

/**
 * What a step did, in a few words: the `summary` of the newest event of this execution naming it
 * (the workflow writes it beside the message), or the message of an event that has none.
 */
export function stepSummary(events: RolloutEvent[], step: number): string {
  const last = [...events].reverse().find((e) => e.step === step);
  if (!last) return "";
  const text = last.summary ?? last.message;
  return text.length > 90 ? `${text.slice(0, 89)}…` : text;
}

/** `eu/25%`: the stage a pass of a release in waves is at (its last once done); "" outside waves. */
export function passStageOf(item: RolloutItem): string {
  if (item.stepCount === 0) return "";
  const label = item.stepLabels[Math.min(currentStepOf(item), item.stepCount - 1)] ?? "";
  return passOfStage(label) === undefined ? "" : label;
}

function stepMark(item: RolloutItem, index: number, current: number): string {
  if (index < current) return "✔";
  if (index > current) return "·";
  if (item.phase === "Degraded") return "✖";
  if (item.phase === "Paused") return "॥";
  return "◌";
}

function shortDigest(digest: string): string {
  const [algo, hex] = digest.includes(":") ? digest.split(":", 2) : ["", digest];
  const short = (hex ?? "").slice(0, 12);
  return algo ? `${algo}:${short}` : short;
}

function imageLine(revision: Revision, roles: string[]): string {
  const name = revision.tag ? `${revision.image.split("@")[0]}:${revision.tag}` : revision.image;
  return `${name} (${roles.join(", ")}, revision ${revision.revision}, ${shortDigest(revision.digest)})`;
}

export function imageLines(item: RolloutItem): string[] {
  const stable = item.stableRevision;
  const current = item.currentRevision;
  if (stable && current && stable.digest === current.digest) return [imageLine(stable, ["stable"])];
  const lines: string[] = [];
  if (stable) lines.push(imageLine(stable, ["stable"]));
  if (current) lines.push(imageLine(current, [item.phase === "Degraded" ? "canary, aborted" : "canary"]));
  return lines;
}

/** The runs of the execution driving the rollout, in step order (the background run last). */
export function runsOfCurrentExecution(
  view: Pick<RolloutView, "item" | "runs">,
): StoredRun<StoredAnalysis>[] {
  return view.runs
    .filter((r) => r.run.context.executionArn === view.item.executionArn)
    .sort((a, b) => Number(a.run.background) - Number(b.run.background) || a.runId.localeCompare(b.runId));
}

function measurementText(m: {
  phase: string;
  value?: string | undefined;
  message?: string | undefined;
}): string {
  const icon = ANALYSIS_ICON[m.phase as AnalysisPhase] ?? "?";
  if (m.value !== undefined) return `${icon} ${m.value}`;
  return `${icon} ${m.phase}${m.message ? ` (${m.message})` : ""}`;
}

function runLines(
  stored: StoredRun<StoredAnalysis>,
  measured: StoredMeasurement<StoredMeasurementValue>[],
): string[] {
  const { run, background, stepIndex, templates } = stored.run;
  const where = background ? "background" : `step ${stepIndex}`;
  const lines = [
    `  ${ANALYSIS_ICON[run.phase]} ${stored.runId}  ${run.phase}  ${where}  ${templates.join(", ")}`,
  ];
  if (run.message) lines.push(`      ${run.message}`);
  const metricNames = [
    ...new Set([...run.metrics.map((m) => m.name), ...measured.map((m) => m.value.metric)]),
  ];
  for (const metric of metricNames) {
    const result = run.metricResults.find((r) => r.name === metric);
    const fromStore = measured.filter((m) => m.value.metric === metric).map((m) => m.value);
    // The store keeps every measurement (until TTL); the run keeps the last few: prefer the store.
    const recent = (fromStore.length > 0 ? fromStore : (result?.measurements ?? [])).slice(
      -MEASUREMENTS_SHOWN,
    );
    const held = result && result.held > 0 ? `, ${result.held} held` : "";
    const counts = result
      ? `  (${result.successful} successful, ${result.failed} failed, ${result.inconclusive} inconclusive, ${result.error} error${held})`
      : "";
    const shown = recent.length > 0 ? recent.map(measurementText).join("  ") : "no measurement yet";
    const phase = result ? `${ANALYSIS_ICON[result.phase]} ` : "";
    lines.push(`      ${phase}${metric}: ${shown}${counts}`);
    // A judge's latest decision, in its own words with its figures.
    const gate = result?.judge?.last;
    if (gate) lines.push(`        ${gate.reason} [look ${gate.look}]`);
  }
  return lines;
}

/** The latest decision of every gate of the current execution's runs, for `rollouts get --json`. */
export function currentGates(
  view: Pick<RolloutView, "item" | "runs">,
): Array<GateSummary & { runId: string }> {
  return runsOfCurrentExecution(view).flatMap((r) =>
    gatesOf(r.run.run).map((g) => ({ runId: r.runId, ...g })),
  );
}

/** One frame of `rollouts get NAME`: the rollout as `kubectl argo rollouts get rollout` shows it. */
export function renderRollout(view: RolloutView): string {
  const { item } = view;
  const lines: string[] = [];
  lines.push(field("Name", item.name));
  lines.push(field("Status", `${PHASE_ICON[item.phase]} ${item.phase}`));
  if (item.message) lines.push(field("Message", item.message));
  const strategy = inferStrategy(item);
  if (strategy) lines.push(field("Strategy", strategy));
  const current = currentStepOf(item);
  // A pass of a release in waves: its stage with the wave (`eu/25%`).
  const stage = passStageOf(item);
  lines.push(field("  Step", `${current}/${item.stepCount}${stage ? ` (${stage})` : ""}`));
  lines.push(field("  SetWeight", String(item.weight)));
  lines.push(
    field(
      "  ActualWeight",
      item.drift ? `changed by someone else (${item.drift.message})` : String(item.weight),
    ),
  );
  const images = imageLines(item);
  images.forEach((line, i) => {
    lines.push(i === 0 ? field("Images", line) : continuation(line));
  });
  if (images.length === 0) lines.push(field("Images", "none deployed yet"));
  if (item.executionArn)
    lines.push(field("Execution", item.executionArn.split(":").at(-1) ?? item.executionArn));
  if (item.waitingFor && item.waitingSince !== null) {
    const until = item.pause?.until ? `, resumes at ${isoSeconds(item.pause.until)}` : "";
    const who =
      item.waitingFor === "analysis" || item.waitingFor === "hook"
        ? ""
        : item.pause?.until
          ? " (rollouts promote skips it)"
          : " (rollouts promote ends it)";
    lines.push(
      field("Waiting for", `${item.waitingFor} since ${isoSeconds(item.waitingSince)}${until}${who}`),
    );
  }
  if (item.abortRequested && item.phase !== "Degraded") {
    lines.push(field("Abort requested", item.abortReason ?? "yes"));
  }

  if (item.stepCount > 0) {
    lines.push("", "Steps:");
    const events = currentEvents(item);
    for (let i = 0; i < item.stepCount; i++) {
      const pointer = i === current && item.phase !== "Healthy" ? "▶" : " ";
      const summary = stepSummary(events, i) || (item.stepLabels[i] ?? "");
      lines.push(`  ${pointer} ${stepMark(item, i, current)} ${i}${summary ? `  ${summary}` : ""}`.trimEnd());
    }
  }

  const runs = runsOfCurrentExecution(view);
  if (runs.length > 0) {
    lines.push("", "Analysis runs:");
    for (const run of runs) lines.push(...runLines(run, view.measurements[run.runId] ?? []));
  }

  const events = item.events.slice(-EVENTS_SHOWN);
  if (events.length > 0) {
    lines.push("", "Events:");
    const width = Math.max(...events.map((e) => e.type.length));
    for (const e of events) lines.push(`  ${isoSeconds(e.at)}  ${e.type.padEnd(width)}  ${e.message}`);
  }
  // One line each: a line break inside a stored message must not break the frame either.
  return `${lines.map((line) => printable(line)).join("\n")}\n`;
}

/** `rollouts list`: one line per rollout, as `kubectl argo rollouts list rollouts` does. */
export function renderList(items: RolloutItem[]): string {
  if (items.length === 0) return "No rollouts found.\n";
  const rows = items.map((item) => [
    item.name,
    `${PHASE_ICON[item.phase]} ${item.phase}`,
    `${currentStepOf(item)}/${item.stepCount}`,
    String(item.weight),
    item.stableRevision ? String(item.stableRevision.revision) : "-",
    item.currentRevision && item.currentRevision.digest !== item.stableRevision?.digest
      ? String(item.currentRevision.revision)
      : "-",
    isoSeconds(item.updatedAt),
    item.message,
  ]);
  const header = ["NAME", "STATUS", "STEP", "WEIGHT", "STABLE", "CANARY", "UPDATED", "MESSAGE"];
  const safe = rows.map((row) => row.map((cell) => printable(cell)));
  return `${columns(header, safe).join("\n")}\n`;
}
