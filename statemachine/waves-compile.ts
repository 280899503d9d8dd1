import type { StateMachineDefinition } from "./compile.ts";
import { definitionProblems, EXECUTION_SUPERSEDED } from "./compile.ts";
import { formatDuration } from "./duration.ts";
import { SpecError } from "./problems.ts";
import type { RolloutSpec } from "./spec.ts";
import type { DeployedTarget, WavePass } from "./waves.ts";

/**
 * The wave coordinator: a state machine in the release's home region that runs each pass's
 * rollout (its own state machine, in its own region or account) one after the other with
 * Step Functions' `startExecution.sync:2`, waits for it, bakes between waves, and on a failed pass
 * rolls back what `onFailure` says. It calls no Lambda: what a pass does is its own rollout's.
 */

/** The Step Functions integration that starts an execution and waits for it to end. */
export const START_EXECUTION_SYNC = "arn:aws:states:::states:startExecution.sync:2";

/** The error a coordinator ends with when a pass failed. */
export const WAVE_FAILED = "WaveFailed";

/** The error a coordinator ends with when a newer release took one of its passes over. */
export const WAVE_SUPERSEDED = "WaveSuperseded";

/** `definitionSubstitutions` placeholders of pass `n` (from 1): its state machine and, cross-account, the role. */
export const wavePlaceholders = (n: number) => ({
  stateMachineArn: `WavePass${n}StateMachineArn`,
  roleArn: `WavePass${n}RoleArn`,
});

/** A pass as the coordinator runs it: the deployment says whether it needs a role (another account). */
export type CoordinatedPass = WavePass<DeployedTarget & { crossAccount?: boolean }>;

type State = Record<string, unknown>;

const key = (n: number) => `p${String(n).padStart(2, "0")}`;
const stem = (n: number, pass: string) => `Pass${String(n).padStart(2, "0")}-${pass}`;

/**
 * Compiles a release in waves to the coordinator's ASL. The input is the trigger's
 * (`{rollout, revision, trigger}`); each pass's rollout gets the same revision, under the
 * coordinator's execution name (one per state machine, so a redelivered start is idempotent).
 *
 * On a failed pass (its rollout already ended Degraded: rolled back, or left as it was with
 * `stop`): `rollback-wave` and `stop` end the release there; `rollback-all` first starts, newest
 * first, each promoted pass's rollout again with the revision it had before the release, in
 * rollback mode (Begin skips the steps, as Argo Rollouts' rollbackWindow does, so the previous
 * version takes all the traffic at once), then ends the release. A pass that had no stable
 * version before the release (its first) has nothing to return to and is left as it is.
 */
export function compileWaves(spec: RolloutSpec, passes: readonly CoordinatedPass[]): StateMachineDefinition {
  const waves = spec.waves;
  if (!waves) throw new TypeError(`rollout ${spec.name} has no waves`);
  if (passes.length === 0) throw new TypeError(`rollout ${spec.name}: no pass to run`);
  const states: Record<string, State> = {};
  for (let n = 1; n <= passes.length; n++) {
    Object.assign(states, passRun(n, passes), passFailure(n, passes, waves.onFailure));
  }
  if (waves.onFailure === "rollback-all") Object.assign(states, undoStates(passes));
  Object.assign(states, endStates(waves.onFailure));
  const first = passes[0] as CoordinatedPass;
  const definition: StateMachineDefinition = {
    Comment: `sfn-rollouts: release "${spec.name}" in ${waves.list.length} waves (${passes.map((p) => p.pass).join(", ")}), onFailure ${waves.onFailure}`,
    StartAt: passEntry(1, first),
    States: states,
  };
  const problems = definitionProblems(definition, `rollout ${spec.name} (waves)`);
  if (problems.length > 0) throw new SpecError(problems);
  return definition;
}

/** The first state of pass `n`: the bake before its wave, if it has one, or its start. */
function passEntry(n: number, p: CoordinatedPass): string {
  return p.bakeBefore > 0 ? `${stem(n, p.pass)}-Bake` : stem(n, p.pass);
}

/**
 * Pass `n` (from 1) run: the bake before its wave, then its rollout started and waited for, which
 * keeps the version the pass had before (to undo it) and goes on to the next pass.
 */
function passRun(n: number, passes: readonly CoordinatedPass[]): Record<string, State> {
  const p = passes[n - 1] as CoordinatedPass;
  const name = stem(n, p.pass);
  const next = passes[n];
  const states: Record<string, State> = {};
  if (p.bakeBefore > 0) {
    states[`${name}-Bake`] = {
      Type: "Wait",
      Comment: `The bake of wave before ${p.wave}: ${formatDuration(p.bakeBefore)}`,
      Seconds: Math.ceil(p.bakeBefore),
      Next: name,
    };
  }
  states[name] = {
    ...startPass(n, p, "$$.Execution.Name", {
      "revision.$": "$.revision",
    }),
    Comment: `Wave ${p.wave}: the rollout in ${p.target.account ? `${p.target.account}/` : ""}${p.target.region}${p.approvalBefore ? " (waits for an approval before any traffic moves)" : ""}`,
    ResultSelector: { "executionArn.$": "$.ExecutionArn", "previous.$": "$.Output.last.value.previous" },
    ResultPath: `$.passes.${key(n)}`,
    Catch: [{ ErrorEquals: ["States.ALL"], ResultPath: "$.failure", Next: `${name}-Failed` }],
    Next: next ? passEntry(n + 1, next) : "Released",
  };
  return states;
}

/**
 * What follows pass `n`'s failure: it is recorded, then the release ends superseded when a newer
 * release took the pass over, or else undoes the passes before it (`rollback-all`) and fails.
 */
function passFailure(
  n: number,
  passes: readonly CoordinatedPass[],
  onFailure: string,
): Record<string, State> {
  const p = passes[n - 1] as CoordinatedPass;
  const name = stem(n, p.pass);
  const undoFrom = onFailure === "rollback-all" && n > 1 ? undoEntry(n - 1, passes) : "ReleaseFailed";
  return {
    [`${name}-Failed`]: {
      Type: "Pass",
      Comment:
        onFailure === "rollback-all"
          ? `${p.pass} failed: the passes promoted before it go back to their previous version, newest first`
          : onFailure === "stop"
            ? `${p.pass} failed: its weights stay as they were and the release stops, for a person`
            : `${p.pass} failed and returned to its stable version; the passes before it keep the release`,
      Parameters: { pass: p.pass, wave: p.wave, "error.$": "$.failure.Error", "cause.$": "$.failure.Cause" },
      ResultPath: "$.failed",
      Next: `${name}-Superseded?`,
    },
    // A newer release took this pass's rollout over: it owns the passes before too, so nothing
    // is rolled back and the release ends as superseded.
    [`${name}-Superseded?`]: {
      Type: "Choice",
      Comment: `Did a newer release take ${p.pass} over?`,
      Choices: [
        {
          And: [
            { Variable: "$.failure.Cause", IsPresent: true },
            { Variable: "$.failure.Cause", StringMatches: `*${EXECUTION_SUPERSEDED}*` },
          ],
          Next: "ReleaseSuperseded",
        },
      ],
      Default: undoFrom,
    },
  };
}

/**
 * `rollback-all`'s undo chain, newest pass first: each promoted pass's rollout started again with
 * the version it had before the release, in rollback mode; a pass that had none is skipped.
 */
function undoStates(passes: readonly CoordinatedPass[]): Record<string, State> {
  const states: Record<string, State> = {};
  for (let n = passes.length - 1; n >= 1; n--) {
    const p = passes[n - 1] as CoordinatedPass;
    const name = `Undo-${stem(n, p.pass)}`;
    const next = n > 1 ? undoEntry(n - 1, passes) : "ReleaseFailed";
    states[`${name}?`] = {
      Type: "Choice",
      Comment: `${p.pass} had no stable version before the release: nothing to return to`,
      Choices: [{ Variable: `$.passes.${key(n)}.previous`, IsNull: true, Next: next }],
      Default: name,
    };
    states[name] = {
      ...startPass(n, p, "States.Format('undo-{}', States.Hash($$.Execution.Id, 'SHA-256'))", {
        revision: {
          "repository.$": "$.revision.repository",
          "image.$": `$.passes.${key(n)}.previous.image`,
          "digest.$": `$.passes.${key(n)}.previous.digest`,
          "tag.$": `$.passes.${key(n)}.previous.tag`,
        },
        rollback: true,
        // Refused if another execution (a newer release) has taken the rollout over since.
        "undoes.$": `$.passes.${key(n)}.executionArn`,
      }),
      Comment: `Wave ${p.wave}: ${p.pass} back to the version it had before the release`,
      ResultSelector: { "executionArn.$": "$.ExecutionArn" },
      ResultPath: `$.undone.${key(n)}`,
      // A rollback that fails still lets the others run; the release ends failed either way.
      Catch: [{ ErrorEquals: ["States.ALL"], ResultPath: `$.undoFailed.${key(n)}`, Next: next }],
      Next: next,
    };
  }
  return states;
}

/** How a release ends: released, superseded by a newer one, or failed. */
function endStates(onFailure: string): Record<string, State> {
  return {
    Released: { Type: "Succeed" },
    ReleaseSuperseded: {
      Type: "Fail",
      Error: WAVE_SUPERSEDED,
      Cause:
        "A newer release took a pass's rollout over: it owns the regions now; this release rolled nothing back.",
    },
    ReleaseFailed: {
      Type: "Fail",
      Error: WAVE_FAILED,
      Cause: `A pass of the release failed (onFailure: ${onFailure}): the coordinator's $.failed says which, each pass's rollout says why.`,
    },
  };
}

function undoEntry(n: number, passes: readonly CoordinatedPass[]): string {
  const p = passes[n - 1] as CoordinatedPass;
  return `Undo-${stem(n, p.pass)}?`;
}

/** A Task that starts pass `n`'s rollout under `name` (a JSONPath or intrinsic) and waits for it. */
function startPass(n: number, p: CoordinatedPass, name: string, input: Record<string, unknown>): State {
  const placeholders = wavePlaceholders(n);
  return {
    Type: "Task",
    Resource: START_EXECUTION_SYNC,
    Parameters: {
      StateMachineArn: `\${${placeholders.stateMachineArn}}`,
      "Name.$": name,
      Input: {
        "rollout.$": "$.rollout",
        ...input,
        trigger: {
          "eventId.$": "$.trigger.eventId",
          "eventTime.$": "$.trigger.eventTime",
          "generation.$": "$.trigger.generation",
          "executionName.$": "$$.Execution.Name",
          // Orders two releases pushed in the same second: the one started later wins.
          "releasedAt.$": "$$.Execution.StartTime",
        },
        "AWS_STEP_FUNCTIONS_STARTED_BY_EXECUTION_ID.$": "$$.Execution.Id",
      },
    },
    ...(p.target.crossAccount ? { Credentials: { RoleArn: `\${${placeholders.roleArn}}` } } : {}),
    Retry: [
      {
        ErrorEquals: ["StepFunctions.SdkClientException", "StepFunctions.StepFunctionsException"],
        IntervalSeconds: 2,
        MaxAttempts: 4,
        BackoffRate: 2,
        JitterStrategy: "FULL",
      },
    ],
  };
}
