import { ENV } from "../../functions/config.ts";
import type { RolloutItem } from "../../functions/store/schema.ts";
import type { AwsOptions } from "../aws.ts";
import { Exit } from "../exit-codes.ts";
import { type Io, UsageError } from "../io.ts";
import { currentStepOf, PHASE_ICON, passStageOf } from "../render.ts";
import { columns } from "../table.ts";
import { printable } from "../terminal.ts";
import { RolloutMissingError, withAws } from "./operate-actions.ts";
import { type FoundRelease, findRelease } from "./waves-find.ts";

/** One `--at REGION=TABLE`: where a wave's rollout lives. */
export interface WaveLocation {
  region: string;
  table: string;
}

const REGION = /^[a-z]{2}(?:-[a-z]+)+-\d+$/;

/** `--home-region`: a region's name, or a {@link UsageError} naming the value. */
export function checkHomeRegion(region: string | undefined): void {
  if (region !== undefined && !REGION.test(region)) {
    throw new UsageError(
      `--home-region "${region}": expected a region, such as eu-west-1 (where the release's coordinator runs)`,
    );
  }
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

/**
 * One row per wave, in the order given: the wave, its region, status, step, weight and revisions.
 * A row without an item is a pass that could not be read: its `problem` is the message.
 */
export function renderWaves(
  rows: readonly { location: WaveLocation; item?: RolloutItem; pass?: string; problem?: string }[],
): string {
  const header = ["WAVE", "REGION", "STATUS", "STEP", "WEIGHT", "STABLE", "CANARY", "MESSAGE"];
  const cells = rows.map(({ location, item, pass, problem }) => {
    if (!item) {
      return [pass ?? "-", location.region, "? Unknown", "-", "-", "-", "-", problem ?? "not read"].map(
        (cell) => printable(cell),
      );
    }
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
 * `rollouts waves NAME`: every wave of a release, found from its coordinator (`waves-find.ts`):
 * the state machine `<NAME>-waves` in the CLI's region, or the one that started the rollout's
 * execution in the table given (`--table`, `ROLLOUTS_TABLE`). A pass that cannot be read is a row
 * saying why; exit 2 when there is no coordinator to find.
 *
 * `rollouts waves NAME --at REGION=TABLE...` reads the regions given instead (the waves in the
 * order given); a region that cannot be read ends the command with its error, prefixed with the
 * region.
 */
export async function wavesAction(
  io: Io,
  name: string,
  options: { at: readonly string[]; table?: string; homeRegion?: string; env?: AwsOptions["env"] },
): Promise<number> {
  checkHomeRegion(options.homeRegion);
  if (options.homeRegion !== undefined && options.at.length > 0) {
    throw new UsageError(
      "--home-region finds the coordinator, --at names the regions instead: give one of them",
    );
  }
  if (options.at.length === 0) return discoveredWavesAction(io, name, options);
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

/** A release's header: its coordinator and its newest execution. */
export function releaseLine(found: Pick<FoundRelease, "coordinatorArn" | "latest">): string {
  const latest = found.latest
    ? `, newest release ${found.latest.name}: ${found.latest.status}`
    : ", never run";
  return printable(`Coordinator: ${found.coordinatorArn}${latest}`);
}

async function discoveredWavesAction(
  io: Io,
  name: string,
  options: { table?: string; homeRegion?: string; env?: AwsOptions["env"] },
): Promise<number> {
  const env = options.env ?? process.env;
  const given = options.table?.trim();
  const table = given || env[ENV.tableName]?.trim();
  let item: RolloutItem | undefined;
  if (table) {
    // The rollout's item in this region's table, if it is there, names the coordinator that started
    // it. A --table that cannot be read ends the command; ROLLOUTS_TABLE, set for some other
    // region perhaps, is only a hint: the coordinator is then looked for by name.
    const quiet: Io = { out: io.out, err: () => {} };
    const code = await withAws(given ? io : quiet, { table, env }, async (deps) => {
      item = await deps.store.get(name);
      return Exit.ok;
    });
    if (code !== Exit.ok && given) return code;
  }
  let found: FoundRelease | undefined;
  try {
    found = await findRelease(name, { item, env, homeRegion: options.homeRegion });
  } catch (error) {
    if (error instanceof UsageError) throw error;
    io.err(printable(`rollouts: cannot read the coordinator of "${name}": ${(error as Error).message}`));
    return Exit.unavailable;
  }
  if (!found) {
    io.err(
      printable(
        options.homeRegion !== undefined
          ? `rollouts: no release in waves for "${name}": no state machine ${name}-waves in ${options.homeRegion}${table ? ` and no execution of it started by one in table ${table}` : ""}; or name each region with --at REGION=TABLE`
          : `rollouts: no release in waves for "${name}": no state machine ${name}-waves in this region, none of its state machines here names one (run in the home region or a pass's, AWS_REGION, or give --home-region) and no execution of it started by one${table ? ` in table ${table}` : ""}; or name each region with --at REGION=TABLE`,
      ),
    );
    return Exit.badInput;
  }
  io.out(`${releaseLine(found)}\n${renderWaves(found.rows)}`);
  return Exit.ok;
}
