import type { RolloutView } from "../render.ts";
import { executionFacts } from "./executions.ts";
import { exposureOf, type Traffic, timelineOf } from "./exposure.ts";
import type { ExecutionStatus, TriageReport } from "./model.ts";
import { nextCommands } from "./next.ts";
import { judge } from "./verdict.ts";

/**
 * `rollouts triage`'s diagnosis, as a pure function of what `rollouts get` reads and the time:
 * the rollout item, its analysis runs with their measurements, what Step Functions says of the
 * execution, and `now` from the CLI's clock. It returns the fixed report (`model.ts`): the
 * verdict, the timeline, what decided, the exposure, the next commands.
 */
export interface TriageInput {
  /** The item, the runs and the measurements of the execution to triage. */
  view: RolloutView;
  /** Epoch ms: the time the report is made at. */
  now: number;
  /** An earlier execution, by its revision; absent: the one driving the rollout. */
  revision?: number;
  /** What Step Functions says of the execution; null when it was not read. */
  execution?: ExecutionStatus | null;
  traffic?: Traffic;
}

export function diagnose(input: TriageInput): TriageReport {
  const { view, now } = input;
  const facts = executionFacts(view, input.revision);
  const execution = input.execution ?? null;
  const { verdict, decision } = judge({ facts, item: view.item, now, execution });
  return {
    rollout: view.item.name,
    now: new Date(now).toISOString(),
    execution: {
      name: facts.name,
      arn: facts.arn,
      revision: facts.revision,
      image: facts.image,
      stable: facts.stable,
      current: facts.current,
      phase: facts.current ? view.item.phase : null,
      stepFunctions: execution,
    },
    verdict,
    timeline: timelineOf(facts.events),
    decision,
    exposure: exposureOf(facts, now, input.traffic),
    next: nextCommands({ verdict, decision, facts, item: view.item, execution }),
  };
}
