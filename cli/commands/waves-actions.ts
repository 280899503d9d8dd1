import type { RolloutItem } from "../../functions/store/schema.ts";
import type { AwsOptions } from "../aws.ts";
import { Exit } from "../exit-codes.ts";
import { type Io, UsageError } from "../io.ts";
import { currentStepOf, PHASE_ICON, passStageOf } from "../render.ts";
import { columns } from "../table.ts";
import { printable } from "../terminal.ts";
import { RolloutMissingError, withAws } from "./operate-actions.ts";

/** One `--at REGION=TABLE`: where a wave's rollout lives. */
export interface WaveLocation {
  region: string;
  table: string;
}

/** `eu-west-1=rollouts-eu` → `{region, table}`; a {@link UsageError} naming the value otherwise. */
export function parseLocation(text: string): WaveLocation {
  const match = /^([a-z]{2}(?:-[a-z]+)+-\d+)=(\S+)$/.exec(text.trim());
  if (!match) {
    throw new UsageError(
      `--at "${text}": expected REGION=TABLE, such as eu-west-1=rollouts (the region's controller table)`,
    );
  }
  return { region: match[1] as string, table: match[2] as string };
}

const tagOf = (r: RolloutItem["stableRevision"]) => (r ? (r.tag ?? String(r.revision)) : "-");

/** One row per wave, in the order given: the wave, its region, status, step, weight and revisions. */
export function renderWaves(rows: readonly { location: WaveLocation; item: RolloutItem }[]): string {
  const header = ["WAVE", "REGION", "STATUS", "STEP", "WEIGHT", "STABLE", "CANARY", "MESSAGE"];
  const cells = rows.map(({ location, item }) => {
    const stage = passStageOf(item);
    const canary =
      item.currentRevision && item.currentRevision.digest !== item.stableRevision?.digest
        ? tagOf(item.currentRevision)
        : "-";
    return [
      stage ? (stage.split("/")[0] as string) : "-",
      location.region,
      `${PHASE_ICON[item.phase]} ${item.phase}`,
      `${currentStepOf(item)}/${item.stepCount}${stage ? ` ${stage}` : ""}`,
      String(item.weight),
      tagOf(item.stableRevision),
      canary,
      item.message,
    ].map((cell) => printable(cell));
  });
  return `${columns(header, cells).join("\n")}\n`;
}

/**
 * `rollouts waves NAME --at REGION=TABLE...`: every wave of a release, reading each region's
 * table in that region (the waves in the order given). A region that cannot be read ends the
 * command with its error, prefixed with the region.
 */
export async function wavesAction(
  io: Io,
  name: string,
  options: { at: readonly string[]; env?: AwsOptions["env"] },
): Promise<number> {
  if (options.at.length === 0) throw new UsageError("--at REGION=TABLE: name at least one region");
  const locations = options.at.map(parseLocation);
  const base = options.env ?? process.env;
  const rows: { location: WaveLocation; item: RolloutItem }[] = [];
  for (const location of locations) {
    const regionIo: Io = { out: io.out, err: (text) => io.err(`${location.region}: ${text}`) };
    const code = await withAws(
      regionIo,
      { table: location.table, env: { ...base, AWS_REGION: location.region } },
      async (deps) => {
        const item = await deps.store.get(name);
        if (!item) throw new RolloutMissingError(name);
        rows.push({ location, item });
        return Exit.ok;
      },
    );
    if (code !== Exit.ok) return code;
  }
  io.out(renderWaves(rows));
  return Exit.ok;
}
