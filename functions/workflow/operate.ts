import { passOfStage } from "../../statemachine/waves.ts";
import { type AbortOutcome, requestAbort } from "../abort/request-abort.ts";
import type { TaskTokens } from "../abort/task-tokens.ts";
import type { Clock } from "../clock.ts";
import type { RolloutStore } from "../store/port.ts";
import { appendEvent, type Revision, type RolloutItem } from "../store/schema.ts";
import { update } from "../store/update.ts";
import { executionName as executionNameFor, type RolloutExecutionInput } from "../trigger/decide.ts";
import type { Executions } from "../trigger/executions.ts";

/**
 * What the `rollouts` CLI does to a running rollout, as a domain: promote a pause, accept an
 * Inconclusive run or drift, skip the remaining steps, abort, retry an aborted revision, undo to
 * the previous one. It needs only the store, task tokens and the executions port, so it runs the
 * same against AWS and the local runtime.
 */
export interface OperateDeps {
  store: RolloutStore;
  tokens: TaskTokens;
  executions: Executions;
  clock: Clock;
}

export type OperateOutcome = { ok: true; message: string } | { ok: false; message: string };

/**
 * `rollouts promote NAME [--full]`: ends the wait the rollout is in. A pause or approval
 * continues (`--full` skips every remaining step); a running analysis can only be skipped with
 * `--full`; weight drift is overwritten on the next attempt of the step.
 */
export async function promoteRollout(
  deps: OperateDeps,
  name: string,
  full: boolean,
): Promise<OperateOutcome> {
  const item = await deps.store.get(name);
  if (!item) return { ok: false, message: `rollout "${name}" not found` };
  if (item.phase === "Healthy" || item.phase === "Degraded") {
    return {
      ok: false,
      message: `rollout "${name}" is ${item.phase}: nothing to promote${item.phase === "Degraded" ? " (use rollouts retry to run the aborted revision's steps again)" : ""}`,
    };
  }
  const token = item.currentTaskToken;
  if (token === null) {
    return {
      ok: false,
      message: `rollout "${name}" is ${item.phase} at step ${item.stepIndex + 1}/${item.stepCount} and waits on nothing a person can end; try again at its next pause`,
    };
  }
  if (item.waitingFor === "hook") {
    return {
      ok: false,
      message: `rollout "${name}" waits for a lifecycle hook's verdict: the hook answers it (or its timeout aborts the rollout); rollouts abort stops it now`,
    };
  }
  if (item.waitingFor === "analysis" && !full) {
    return {
      ok: false,
      message: `rollout "${name}" is running an analysis: wait for it, or skip the remaining steps with rollouts promote --full`,
    };
  }
  const output =
    item.waitingFor === "analysis"
      ? { phase: "Successful", message: "skipped by rollouts promote --full", outcome: "full" }
      : { outcome: full ? "full" : "continue" };
  // A drift approval must be visible to the step that runs next, and so must the end of a hold
  // (the step that runs again would otherwise hold again): both are written before the token is
  // answered; the rest is recorded only once the wait is known to have ended.
  if ((item.drift && !item.drift.approved) || item.hold) {
    await update(deps.store, name, item.version, (latest) =>
      latest.drift || latest.hold
        ? {
            ...latest,
            ...(latest.drift ? { drift: { ...latest.drift, approved: true } } : {}),
            hold: null,
          }
        : null,
    );
  }
  const delivery = await deps.tokens.sendSuccess(token, output);
  if (!delivery.delivered) {
    return {
      ok: false,
      message: `the ${item.waitingFor ?? "wait"} of "${name}" was already over (${delivery.reason}): nothing was promoted`,
    };
  }
  await update(deps.store, name, "latest", (latest) =>
    latest.currentTaskToken === token
      ? {
          ...latest,
          phase: "Progressing",
          message: "",
          currentTaskToken: null,
          waitingFor: null,
          waitingSince: null,
          pause: null,
          events: appendEvent(latest.events, {
            at: deps.clock.now(),
            type: "RolloutPromoted",
            message: full
              ? "promoted: the remaining steps are skipped"
              : `promoted: ${describeWait(latest)} ended`,
            step: latest.stepIndex,
          }),
        }
      : // The workflow already moved on (its next step wrote the item): only the event is added.
        {
          ...latest,
          events: appendEvent(latest.events, {
            at: deps.clock.now(),
            type: "RolloutPromoted",
            message: full
              ? "promoted: the remaining steps are skipped"
              : `promoted: ${describeWait(item)} ended`,
            step: item.stepIndex,
          }),
        },
  );
  return {
    ok: true,
    message: full
      ? `rollout "${name}" promoted: the remaining steps are skipped`
      : `rollout "${name}": ${describeWait(item)} ended, the rollout continues`,
  };
}

function describeWait(item: RolloutItem): string {
  if (item.drift) return "the weight drift pause";
  switch (item.pause?.reason) {
    case "InconclusiveAnalysisRun":
      return "the Inconclusive analysis pause";
    case "Approval":
      return "the approval";
    default:
      return item.waitingFor === "analysis" ? "the analysis" : "the pause";
  }
}

/** `rollouts abort NAME`: the abort channel, worded for a person. */
export async function abortRollout(
  deps: OperateDeps,
  name: string,
  reason?: string,
): Promise<OperateOutcome> {
  const outcome: AbortOutcome = await requestAbort({
    store: deps.store,
    sfn: deps.tokens,
    name,
    reason: reason ?? "aborted by rollouts abort",
    clock: deps.clock,
  });
  const ok =
    outcome.status === "signalled" || outcome.status === "recorded" || outcome.status === "token-stale";
  return { ok, message: outcome.message };
}

/** The state machine of an execution: `…:execution:SM:NAME` → `…:stateMachine:SM`. */
export function stateMachineArnOf(executionArn: string): string {
  const parts = executionArn.split(":");
  const at = parts.indexOf("execution");
  if (at < 0 || parts.length < at + 3) throw new RangeError(`not an execution ARN: ${executionArn}`);
  return [...parts.slice(0, at), "stateMachine", parts[at + 1]].join(":");
}

/**
 * Starts a new execution of the rollout's state machine for `revision`, recorded as the latest
 * accepted push (a new generation), so Begin takes it and an older execution cannot.
 */
async function restart(
  deps: OperateDeps,
  item: RolloutItem,
  revision: Revision,
  why: string,
  command: "retry" | "undo",
): Promise<OperateOutcome> {
  if (isPassItem(item)) {
    // Its coordinator's execution started it: a restart here would race that release's order.
    return {
      ok: false,
      message: `rollout "${item.name}" is a pass of a release in waves: its coordinator starts it, not rollouts ${command} (release again from the home region: a new push of the image; rollouts waves ${item.name} shows the release)`,
    };
  }
  if (!item.executionArn || !item.trigger) {
    return { ok: false, message: `rollout "${item.name}" has never run: nothing to ${why}` };
  }
  const stateMachineArn = stateMachineArnOf(item.executionArn);
  const generation = item.trigger.generation + 1;
  const name = executionNameFor(item.name, revision.digest, generation);
  const now = deps.clock.now();
  const trigger = {
    ...item.trigger,
    digest: revision.digest,
    tag: revision.tag,
    image: revision.image,
    eventId: `${why}-${now}`,
    eventTime: now,
    generation,
    executionName: name,
    acceptedAt: now,
  };
  await update(deps.store, item.name, item.version, (latest) => ({
    ...latest,
    trigger,
    events: appendEvent(latest.events, { at: now, type: "Triggered", message: `${why} starts ${name}` }),
  }));
  const input: RolloutExecutionInput = {
    rollout: item.name,
    revision: {
      repository: trigger.repository,
      image: revision.image,
      digest: revision.digest,
      tag: revision.tag,
    },
    trigger: { eventId: trigger.eventId, eventTime: now, generation, executionName: name },
  };
  const started = await deps.executions.start({ stateMachineArn, name, input });
  return {
    ok: true,
    message: `rollout "${item.name}": ${why} ${started.status === "started" ? "started" : "had already started"} ${started.executionArn.split(":").at(-1)}`,
  };
}

/** A pass of a release in waves: its stages carry the pass's name (`eu/25%`). */
export const isPassItem = (item: Pick<RolloutItem, "stepLabels">): boolean =>
  item.stepLabels.some((label) => passOfStage(label) !== undefined);

/** `rollouts retry NAME`: runs the steps of the aborted revision again. */
export async function retryRollout(deps: OperateDeps, name: string): Promise<OperateOutcome> {
  const item = await deps.store.get(name);
  if (!item) return { ok: false, message: `rollout "${name}" not found` };
  if (item.phase !== "Degraded" || !item.currentRevision) {
    return {
      ok: false,
      message: `rollout "${name}" is ${item.phase}: only an aborted rollout can be retried`,
    };
  }
  return restart(deps, item, item.currentRevision, "retry", "retry");
}

/**
 * `rollouts undo NAME`: rolls back to the revision that was stable before the current one, through
 * the steps, as Argo's undo does (it is a new revision of the old template).
 */
export async function undoRollout(deps: OperateDeps, name: string): Promise<OperateOutcome> {
  const item = await deps.store.get(name);
  if (!item) return { ok: false, message: `rollout "${name}" not found` };
  if (item.phase === "Progressing" || item.phase === "Paused") {
    return { ok: false, message: `rollout "${name}" is ${item.phase}: abort it first, then undo` };
  }
  const current = item.stableRevision?.digest;
  const previous = [...item.history].reverse().find((h) => h.digest !== current);
  if (!previous) return { ok: false, message: `rollout "${name}" has no earlier revision to go back to` };
  const { at: _at, ...revision } = previous;
  return restart(deps, item, revision, `undo to revision ${previous.revision}`, "undo");
}
