import type { RolloutItem, RolloutPhase } from "../../functions/store/schema.ts";
import { isPassItem } from "../../functions/workflow/operate.ts";
import type { AwsOptions } from "../aws.ts";
import { currentStepOf, passStageOf } from "../render.ts";
import { printable } from "../terminal.ts";
import { releaseLine, renderWaves } from "./waves-actions.ts";
import { type FoundRelease, findRelease, type WaveRow } from "./waves-find.ts";

/**
 * What `rollouts get` shows of the release a pass belongs to, as text (the `Waves:` section) and
 * as JSON (`waves`), and how `--watch` keeps it fresh without reading every region on every tick.
 */

/** One reading of the release: what was found, or why nothing could be. */
export type WavesReading = { found: FoundRelease } | { problem: string };

/**
 * Reads the release `item` belongs to (`waves-find.ts`); undefined for a rollout that is not a
 * pass. It never throws: a coordinator that cannot be found or read is the reading's `problem`.
 */
export async function readWaves(
  item: RolloutItem,
  env: AwsOptions["env"] | undefined,
  homeRegion?: string,
): Promise<WavesReading | undefined> {
  if (!isPassItem(item)) return undefined;
  try {
    const found = await findRelease(item.name, { item, env, homeRegion });
    return found
      ? { found }
      : {
          problem: `no coordinator found: no execution or tag of this region's state machine names one, and no ${item.name}-waves in ${homeRegion ?? "this region"}`,
        };
  } catch (error) {
    return { problem: `cannot read the release's coordinator: ${(error as Error).message}` };
  }
}

/** The `Waves:` section `rollouts get` ends with; "" without a reading. */
export function wavesText(reading: WavesReading | undefined): string {
  if (!reading) return "";
  const text =
    "found" in reading
      ? `${releaseLine(reading.found)}\n${renderWaves(reading.found.rows)}`
      : printable(`${reading.problem}\n`);
  return `\nWaves:\n${text
    .trimEnd()
    .split("\n")
    .map((line) => `  ${line}`)
    .join("\n")}\n`;
}

/** One pass in `rollouts get --json`'s `waves`: its rollout's state, or why it could not be read. */
export interface WavePassJson {
  pass: string | null;
  region: string;
  account: string | null;
  /** Its controller's table, from its state machine's tag (null when the tag could not be read). */
  table: string | null;
  phase: RolloutPhase | null;
  /** Argo's `currentStepIndex` of `stepCount`, as the `STEP` column shows it. */
  step: number | null;
  stepCount: number | null;
  /** The current step's label with its pass (`eu/25%`). */
  stage: string | null;
  weight: number | null;
  /** The stable and (while one runs) canary revisions' tags, or their numbers. */
  stable: string | null;
  canary: string | null;
  message: string | null;
  /** Why the pass could not be read (another account, no tag, no table, no item); null when read. */
  problem: string | null;
}

/** `rollouts get --json`'s `waves` of a pass: the coordinator, its newest release, every pass. */
export interface WavesJson {
  coordinatorArn: string | null;
  /** The coordinator's newest execution; null when it never ran (or was not found). */
  release: { name: string; status: string } | null;
  passes: WavePassJson[];
  /** Why the coordinator could not be found or read; null when it was. */
  problem: string | null;
}

const revisionOf = (r: RolloutItem["stableRevision"]): string | null =>
  r ? (r.tag ?? String(r.revision)) : null;

function passJson(row: WaveRow): WavePassJson {
  const base = {
    pass: row.pass ?? null,
    region: row.location.region,
    account: row.account ?? null,
    table: row.location.table || null,
  };
  const item = row.item;
  if (!item) {
    return {
      ...base,
      phase: null,
      step: null,
      stepCount: null,
      stage: null,
      weight: null,
      stable: null,
      canary: null,
      message: null,
      problem: row.problem ?? "not read",
    };
  }
  const canary =
    item.currentRevision && item.currentRevision.digest !== item.stableRevision?.digest
      ? revisionOf(item.currentRevision)
      : null;
  return {
    ...base,
    phase: item.phase,
    step: currentStepOf(item),
    stepCount: item.stepCount,
    stage: passStageOf(item) || null,
    weight: item.weight,
    stable: revisionOf(item.stableRevision),
    canary,
    message: item.message,
    problem: null,
  };
}

/** `rollouts get --json`'s `waves`: null for a rollout that is not a pass. */
export function wavesJson(reading: WavesReading | undefined): WavesJson | null {
  if (!reading) return null;
  if ("problem" in reading) {
    return { coordinatorArn: null, release: null, passes: [], problem: reading.problem };
  }
  const { found } = reading;
  return {
    coordinatorArn: found.coordinatorArn,
    release: found.latest ?? null,
    passes: found.rows.map(passJson),
    problem: null,
  };
}

/** How often `--watch` reads every region again while this region's frame stays the same. */
export const WAVES_REFRESH_MS = 5_000;

/**
 * The waves of a `--watch`: read on the first frame, again when this region's frame changed (a
 * step, a pause, a promotion here) or `everyMs` after the last reading, and reused in between,
 * so a tick every second does not read every region every second. A reading that fails is a
 * problem in the section, and the next one tries again: the watch never stops for it.
 */
export class WavesRefresh {
  readonly #read: (item: RolloutItem) => Promise<WavesReading | undefined>;
  readonly #everyMs: number;
  readonly #now: () => number;
  #last: { at: number; key: string; reading: WavesReading | undefined } | undefined;
  /** How many times the regions were read (tests measure the cadence with it). */
  reads = 0;

  constructor(
    read: (item: RolloutItem) => Promise<WavesReading | undefined>,
    options: { everyMs?: number; now?: () => number } = {},
  ) {
    this.#read = read;
    this.#everyMs = options.everyMs ?? WAVES_REFRESH_MS;
    this.#now = options.now ?? Date.now;
  }

  /** The reading for this frame; `key` is this region's frame, whose change reads again. */
  async get(item: RolloutItem, key: string): Promise<WavesReading | undefined> {
    const now = this.#now();
    const last = this.#last;
    if (last && last.key === key && now - last.at < this.#everyMs) return last.reading;
    let reading: WavesReading | undefined;
    this.reads++;
    try {
      reading = await this.#read(item);
    } catch (error) {
      reading = { problem: `cannot read the release: ${(error as Error).message}` };
    }
    this.#last = { at: now, key, reading };
    return reading;
  }
}
