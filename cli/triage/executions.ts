import type { StoredRun } from "../../functions/store/port.ts";
import type { RolloutEvent, RolloutItem } from "../../functions/store/schema.ts";
import type { StoredAnalysis } from "../../functions/workflow/analysis.ts";
import { executionName } from "../../functions/workflow/item.ts";
import { RolloutsError } from "../../statemachine/errors.ts";
import type { RolloutView } from "../render.ts";

/**
 * One execution of a rollout as the table tells it: its item events (the item keeps the newest
 * 50, across executions), its analysis runs and their measurements, and how it ended. The
 * execution that drives the rollout now is read from the item itself; an earlier one (`--revision`)
 * from its stretch of the events, which Begin opens with `RolloutUpdated`.
 */
export interface ExecutionFacts {
  name: string | null;
  arn: string | null;
  revision: number | null;
  /** The candidate's tag, or its digest. */
  image: string | null;
  /** The revision stable when it began (its tag or digest), from the item's history. */
  stable: string | null;
  current: boolean;
  /** Its events, from the push that started it (while the item still holds it) to its end. */
  events: RolloutEvent[];
  runs: StoredRun<StoredAnalysis>[];
  measurements: RolloutView["measurements"];
  outcome: "promoted" | "aborted" | "superseded" | "running" | "none";
  /** The event that ended it (`RolloutCompleted`, `RolloutAborted`, `RolloutSuperseded`), if any. */
  end: RolloutEvent | null;
  /**
   * A promoted revision serves all the traffic until the next one is promoted: until then (epoch
   * ms), `now` while it is still the stable one, null when the item no longer says.
   */
  servingUntil: number | "now" | null;
}

/** A `--revision` the item knows no execution of: exit 2, as an unknown rollout. */
export class UnknownRevisionError extends RolloutsError {
  override readonly name = "UnknownRevisionError";
}

/** What Begin writes first (`functions/workflow/begin.ts`): the revision, its tag, the execution. */
const STARTED = /^revision (\d+) \((.*)\) started by (\S+)$/;
const ENDS = new Set(["RolloutCompleted", "RolloutAborted", "RolloutSuperseded"]);

/** The item's events cut at each `RolloutUpdated`; the push that started one (`Triggered`) goes with it. */
interface Stretch {
  events: RolloutEvent[];
  revision: number | null;
  image: string | null;
  name: string | null;
}

export function stretches(events: readonly RolloutEvent[]): Stretch[] {
  const out: Stretch[] = [];
  events.forEach((event, i) => {
    if (event.type !== "RolloutUpdated") {
      out.at(-1)?.events.push(event);
      return;
    }
    const before = events[i - 1];
    const pushed = before?.type === "Triggered" ? [before] : [];
    // The push that started this execution was written while the one before still held the item.
    if (pushed.length > 0) out.at(-1)?.events.pop();
    const started = STARTED.exec(event.message);
    out.push({
      events: [...pushed, event],
      revision: started ? Number(started[1]) : null,
      image: started?.[2] ?? null,
      name: started?.[3] ?? null,
    });
  });
  return out;
}

/** The execution ARN of `name`, on the state machine of a known execution of the rollout. */
function arnOf(name: string | null, view: RolloutView): string | null {
  if (name === null) return null;
  const fromRun = view.runs.find((r) => executionName(r.run.context.executionArn) === name);
  if (fromRun) return fromRun.run.context.executionArn;
  const known = view.item.executionArn;
  return known === null ? null : [...known.split(":").slice(0, -1), name].join(":");
}

/** The tag (or digest) stable at `at`: the newest revision made stable by then. */
function stableAt(item: RolloutItem, at: number): string | null {
  const entry = [...item.history].reverse().find((h) => h.at <= at);
  return entry ? (entry.tag ?? entry.digest) : null;
}

function outcomeOf(stretch: Stretch, later: boolean): Pick<ExecutionFacts, "outcome" | "end"> {
  const end = [...stretch.events].reverse().find((e) => ENDS.has(e.type)) ?? null;
  if (end?.type === "RolloutCompleted") return { outcome: "promoted", end };
  if (end?.type === "RolloutAborted") return { outcome: "aborted", end };
  if (end?.type === "RolloutSuperseded" || later) return { outcome: "superseded", end };
  return { outcome: "running", end: null };
}

/** Until when a promoted revision served everyone: the next promotion, or now while still stable. */
function servingUntil(
  item: RolloutItem,
  after: Stretch[],
  revision: number | null,
): ExecutionFacts["servingUntil"] {
  const next = after.flatMap((s) => s.events).find((e) => e.type === "RolloutCompleted");
  if (next) return next.at;
  return item.stableRevision !== null && item.stableRevision.revision === revision ? "now" : null;
}

/**
 * The execution to triage: the one driving the rollout (no `revision`), or the newest one of
 * `revision` among the item's events. Its runs and measurements are those of `view`.
 */
export function executionFacts(view: RolloutView, revision?: number): ExecutionFacts {
  const { item } = view;
  const all = stretches(item.events);
  const currentName = item.executionArn === null ? null : executionName(item.executionArn);
  const index =
    revision === undefined
      ? all.findLastIndex((s) => s.name === currentName)
      : all.findLastIndex((s) => s.revision === revision);
  if (revision !== undefined && index < 0) {
    const known = [...new Set(all.map((s) => s.revision).filter((r) => r !== null))].join(", ");
    throw new UnknownRevisionError(
      `rollout "${item.name}" has no execution of revision ${revision} among its events (the item keeps the newest 50${known ? `; revisions it holds: ${known}` : ""})`,
    );
  }
  const stretch: Stretch = all[index] ?? { events: [], revision: null, image: null, name: currentName };
  const current = revision === undefined || stretch.name === currentName;
  const name = stretch.name ?? currentName;
  const arn = current ? item.executionArn : arnOf(name, view);
  const runs = view.runs.filter((r) => arn !== null && r.run.context.executionArn === arn);
  const ended = outcomeOf(stretch, index >= 0 && index < all.length - 1);
  const outcome = current ? currentOutcome(item, ended) : ended;
  const first = stretch.events[0]?.at ?? item.updatedAt;
  const revisionNumber = stretch.revision ?? (current ? (item.currentRevision?.revision ?? null) : null);
  return {
    name,
    arn,
    revision: revisionNumber,
    image:
      stretch.image ?? (current ? (item.currentRevision?.tag ?? item.currentRevision?.digest ?? null) : null),
    stable: stableAt(item, first),
    current,
    events: stretch.events,
    runs,
    measurements: Object.fromEntries(runs.map((r) => [r.runId, view.measurements[r.runId] ?? []])),
    ...outcome,
    servingUntil:
      outcome.outcome === "promoted" ? servingUntil(item, all.slice(index + 1), revisionNumber) : null,
  };
}

/** The execution driving the rollout ends as its item says: Healthy promoted, Degraded aborted. */
function currentOutcome(
  item: RolloutItem,
  ended: Pick<ExecutionFacts, "outcome" | "end">,
): Pick<ExecutionFacts, "outcome" | "end"> {
  if (item.executionArn === null) return { outcome: "none", end: null };
  if (item.phase === "Healthy") return { outcome: "promoted", end: ended.end };
  if (item.phase === "Degraded") return { outcome: "aborted", end: ended.end };
  if (ended.outcome === "superseded") return ended;
  return { outcome: "running", end: null };
}
