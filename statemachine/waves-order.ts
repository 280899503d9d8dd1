/**
 * The order of releases in waves. Two pushes released in waves run two coordinators, which reach
 * each region in their own time: a region must end on the newer push's release whatever order
 * they reach it in. So each region's rollout records the push of the release that drives it, and
 * a release older than that one does not take the region over (its rollout ends superseded, and
 * its coordinator `WaveSuperseded`).
 *
 * Releases are ordered by the push's time (ECR's event `time`). ECR's times have one-second
 * resolution: two pushes in the same second are ordered by when their coordinators started (in
 * milliseconds: the later delivery wins, as the trigger of a single rollout takes it), then by the
 * event's id, then by the coordinator's execution name (one event delivered twice may start two
 * coordinators). Ids and names compare by UTF-16 code unit, so every region, whatever its locale,
 * agrees on which of two releases is the newer.
 */

/** The push a release comes from, as its coordinator hands it to every region's rollout. */
export interface ReleasePush {
  /** Epoch ms of the push (its event's `time`). */
  eventTime: number;
  /** The event's id (EventBridge's). */
  eventId: string;
  /** The coordinator's execution name: one per release. */
  executionName: string;
  /** Epoch ms when the coordinator started (`$$.Execution.StartTime`); absent in older records. */
  releasedAt?: number | undefined;
}

const byCodeUnit = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

/** Negative when `a` is the older release, positive when it is the newer, 0 for the same push. */
export function compareReleases(a: ReleasePush, b: ReleasePush): number {
  if (a.eventTime !== b.eventTime) return a.eventTime < b.eventTime ? -1 : 1;
  if (a.releasedAt !== undefined && b.releasedAt !== undefined && a.releasedAt !== b.releasedAt)
    return a.releasedAt < b.releasedAt ? -1 : 1;
  return byCodeUnit(a.eventId, b.eventId) || byCodeUnit(a.executionName, b.executionName);
}

/**
 * Why `incoming` may not take over a region `holder`'s release took (it is the older), or
 * undefined when it may: the newer release, the same one, or no release recorded yet.
 */
export function olderReleaseRefusal(incoming: ReleasePush, holder: ReleasePush | null): string | undefined {
  if (holder === null || compareReleases(incoming, holder) >= 0) return undefined;
  const at = (p: ReleasePush) => new Date(p.eventTime).toISOString();
  const tie = incoming.eventTime === holder.eventTime ? ` (${tieBreak(incoming, holder)})` : "";
  return (
    `release ${incoming.executionName} (pushed ${at(incoming)}) is older than release ` +
    `${holder.executionName} (pushed ${at(holder)}), which took this region${tie}: it does not take it back`
  );
}

/** Which tie-break made `incoming` the older of two releases pushed in the same second. */
function tieBreak(incoming: ReleasePush, holder: ReleasePush): string {
  if (
    incoming.releasedAt !== undefined &&
    holder.releasedAt !== undefined &&
    incoming.releasedAt !== holder.releasedAt
  )
    return `the same second: it started at ${new Date(incoming.releasedAt).toISOString()}, before`;
  if (incoming.eventId !== holder.eventId)
    return `the same second: its event id "${incoming.eventId}" sorts before "${holder.eventId}"`;
  return "the same push: its execution name sorts first";
}
