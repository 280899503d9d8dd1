import type { RolloutPhase } from "../functions/store/schema.ts";

/**
 * The exit codes of every `rollouts` command (and of the local entry points: the proxy, the
 * demo), in one table so a script can rely on them. `docs/cli.md` lists the same codes.
 *
 * - `ok` 0: done; the thing checked is fine (promote, Successful, Healthy).
 * - `negative` 1: the thing checked failed or the command was refused: a judge's rollback, an
 *   analysis that Failed or Errored, a Degraded rollout, the demo's checks failing, and the
 *   operating commands' refusals (nothing to promote, not running, the wait was over, a
 *   concurrent change).
 * - `badInput` 2: usage or input the command cannot use: a bad option or file, an unknown
 *   rollout, no table name or a table that does not exist, a bad setting in the environment.
 * - `hold` 3: neither yes nor no: a judge's hold, an Inconclusive analysis, a Paused rollout.
 * - `progressing` 4: `status`: the rollout is still moving.
 * - `unavailable` 5: a service the command needs failed or did not answer in time (AWS
 *   credentials, region, throttling, permissions, an endpoint that hangs).
 *
 * `status` uses 1 for Degraded, so an unknown rollout is 2, never 1: a script gating on
 * `rollouts status` must not mistake a typo for a failed rollout.
 */
export const Exit = {
  ok: 0,
  negative: 1,
  badInput: 2,
  hold: 3,
  progressing: 4,
  unavailable: 5,
} as const;

export type ExitCode = (typeof Exit)[keyof typeof Exit];

/** `rollouts status`: the phase as the exit code. */
export const STATUS_EXIT: Record<RolloutPhase, ExitCode> = {
  Healthy: Exit.ok,
  Degraded: Exit.negative,
  Paused: Exit.hold,
  Progressing: Exit.progressing,
};
