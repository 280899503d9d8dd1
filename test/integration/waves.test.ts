import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DeleteTableCommand } from "@aws-sdk/client-dynamodb";
import { runWithEnv } from "@sfn-rollouts/test-support/cli";
import { DEAD_URL } from "@sfn-rollouts/test-support/http-server";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { getAction } from "../../cli/commands/operate-actions.ts";
import { ManualClock } from "../../functions/clock.ts";
import { type DemoApp, startDemoApp } from "../../local/demo/app.ts";
import { type LocalDynamo, startDynamo } from "../../local/dynamo.ts";
import { type RunningProxy, startProxy } from "../../local/proxy/server.ts";
import { localProxyTarget } from "../../local/proxy/target.ts";
import { CLI_ENV_KEYS } from "../../local/stack.ts";
import { type LocalPass, type LocalWaves, startLocalWaves } from "../../local/waves.ts";
import { DIGESTS } from "./scenario.ts";

/**
 * A release in two waves (eu-west-1, then us-east-1) on the embedded runtime: one controller per
 * region sharing the runtime's bus and engine, each region behind its own local proxy, and the
 * wave coordinator starting each region's rollout with startExecution.sync:2, in virtual time.
 */

const spec = (onFailure: string, between = "") => `name: shop
steps: [50, 100]
bake: 1m
waves:
  - {name: eu, targets: [eu-west-1]${between ? ", bake: 5m" : ""}}
  - {name: us, targets: [us-east-1]}
onFailure: ${onFailure}
${between ? `approvalsBetween: ["${between}"]` : ""}
`;

let dynamo: LocalDynamo;
const dir = mkdtempSync(join(tmpdir(), "waves-"));
beforeAll(async () => {
  dynamo = await startDynamo("dynalite");
});
afterAll(async () => {
  await dynamo.close();
});

interface Region {
  proxy: RunningProxy;
  apps: DemoApp[];
}
let waves: LocalWaves | undefined;
let regions: Region[] = [];
afterEach(async () => {
  await waves?.close();
  waves = undefined;
  for (const r of regions) {
    await r.proxy.close();
    for (const a of r.apps) await a.close();
  }
  regions = [];
});

/** Two regions; in us-east-1 v2's upstream is dead when `usFails`, so its candidate never gets ready. */
async function start(
  onFailure: string,
  usFails: boolean,
  table: string,
  between = "",
  tagPattern?: string,
): Promise<LocalWaves> {
  const clock = new ManualClock(Date.parse("2026-12-01T12:00:00Z"));
  const file = join(dir, `${table}.yaml`);
  writeFileSync(file, spec(onFailure, between));
  const dead = DEAD_URL;
  const region = async (fails: boolean) => {
    const v1 = await startDemoApp({ version: "v1" });
    const v2 = await startDemoApp({ version: "v2" });
    const proxy = await startProxy({ now: () => clock.now() });
    regions.push({ proxy, apps: [v1, v2] });
    return localProxyTarget({
      adminUrl: proxy.adminUrl,
      readinessPath: "/healthz",
      // v3 runs v2's app; a push by digest only finds its upstream by the digest.
      upstreams: {
        v1: v1.url,
        v2: fails ? dead : v2.url,
        v3: v2.url,
        [DIGESTS.v4]: v2.url,
      },
    });
  };
  waves = await startLocalWaves({
    specFiles: [file],
    regions: [
      { region: "eu-west-1", target: await region(false) },
      { region: "us-east-1", account: "222222222222", target: await region(usFails) },
    ],
    clock,
    dynamo,
    tablePrefix: table,
    ...(tagPattern === undefined ? {} : { tagPattern }),
  });
  return waves;
}

/** Runs `body` with these environment variables set (the SDK reads its endpoints from them), then puts them back. */
async function withEnv<T>(env: Readonly<Record<string, string>>, body: () => Promise<T>): Promise<T> {
  const saved = Object.fromEntries(Object.keys(env).map((k) => [k, process.env[k]]));
  Object.assign(process.env, env);
  try {
    return await body();
  } finally {
    for (const [k, v] of Object.entries(saved)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  }
}

/** Each region's stable tag and phase, in pass order. */
const where = async (w: LocalWaves) =>
  Promise.all(
    w.passes.map(async (p) => {
      const item = await p.item();
      return [p.pass, item?.stableRevision?.tag ?? null, item?.phase ?? null];
    }),
  );

/** What the rollouts CLI reads one region with. */
const cliEnv = (p: LocalPass) => Object.fromEntries(CLI_ENV_KEYS.map((k) => [k, p.env[k] ?? ""]));

async function release(w: LocalWaves, tag: "v1" | "v2", generation: number) {
  // Each release a second after the last: two releases of the same instant are ordered by a tie-break.
  await w.runtime.advanceBy(1_000);
  const arn = w.release(tag, DIGESTS[tag], generation);
  return w.runtime.waitForExecution(arn);
}

/** The coordinator's executions. */
const coordinatorRuns = (w: LocalWaves) =>
  w.runtime.sfn.listExecutions({ stateMachineArn: w.coordinatorArn });

/** Pushes through the home rule; answers the coordinator's execution the push started. */
async function pushOnly(
  w: LocalWaves,
  tag: "v1" | "v2" | "v3" | null,
  digest: string,
  at?: Date,
): Promise<string> {
  const before = new Set(coordinatorRuns(w).map((e) => e.executionArn));
  // Without a time of its own, each push comes a second after the last (ECR's times have
  // one-second resolution; two pushes of the same instant are ordered by a tie-break).
  if (at === undefined) await w.runtime.advanceBy(1_000);
  await w.push(tag, digest, at);
  const started = coordinatorRuns(w).filter((e) => !before.has(e.executionArn));
  expect(started).toHaveLength(1);
  return (started[0] as { executionArn: string }).executionArn;
}

/** Pushes through the home rule and waits for the coordinator the push started. */
async function pushed(w: LocalWaves, tag: "v1" | "v2" | "v3" | null, digest: string) {
  return w.runtime.waitForExecution(await pushOnly(w, tag, digest));
}

/** Advances virtual time until `ready` holds (or fails after `limitMs`). */
async function until(w: LocalWaves, ready: () => Promise<boolean>, limitMs = 3_600_000) {
  for (let t = 0; t <= limitMs; t += 10_000) {
    if (await ready()) return;
    await w.runtime.advanceBy(10_000);
  }
  throw new Error(`still waiting after ${limitMs} ms`);
}

// Synthesizing two controllers costs seconds of CPU on a shared machine, before any virtual time.
describe("a release in waves on the embedded runtime", () => {
  it("promotes wave after wave: each region runs the whole rollout, its stages named after its wave", async () => {
    const w = await start("rollback-all", false, "promoted");
    expect((await release(w, "v1", 1)).status).toBe("SUCCEEDED");
    expect(await where(w)).toEqual([
      ["eu", "v1", "Healthy"],
      ["us", "v1", "Healthy"],
    ]);
    const done = await release(w, "v2", 2);
    expect(done.status).toBe("SUCCEEDED");
    expect(await where(w)).toEqual([
      ["eu", "v2", "Healthy"],
      ["us", "v2", "Healthy"],
    ]);
    // One after the other: us started only once eu had ended.
    const [eu, us] = w.passes.map((p) =>
      w.runtime.sfn
        .listExecutions({ stateMachineArn: p.stateMachineArn })
        .find((e) => e.name.endsWith("-g2")),
    );
    expect(eu?.status).toBe("SUCCEEDED");
    expect(us?.startDate).toBeGreaterThanOrEqual(eu?.stopDate ?? Number.POSITIVE_INFINITY);
    // The whole sequence ran in each: 50% with its bake, then 100%.
    expect((eu?.stopDate ?? 0) - (eu?.startDate ?? 0)).toBeGreaterThanOrEqual(60_000);
    expect((await w.passes[0]?.item())?.stepLabels).toEqual(["eu/50%", "eu/pause: 1m", "eu/100%"]);
    expect((await w.passes[1]?.item())?.stepLabels).toEqual(["us/50%", "us/pause: 1m", "us/100%"]);
    // Lifecycle events on the shared bus say which pass they are about.
    const steps = w.runtime.bus.events
      .filter((e) => e.event.source === "sfn-rollouts" && e.event["detail-type"] === "RolloutStepCompleted")
      .map((e) => e.event.detail as { pass?: string; step: number; revision: number });
    expect(steps.filter((d) => d.revision === 2).map((d) => `${d.pass}@${d.step}`)).toEqual([
      "eu@0",
      "eu@2",
      "us@0",
      "us@2",
    ]);
    // rollouts get in a region shows the stage with its wave.
    const got = await runWithEnv(cliEnv(w.passes[0] as LocalPass), "get", "shop");
    expect(got.out).toMatch(/Step:\s+3\/3 \(eu\/100%\)/);
    // …and name the step with its wave, as the native reference does (traffic@25@eu).
    expect(steps.filter((d) => d.revision === 2).map((d) => (d as { stepName?: string }).stepName)).toEqual([
      "traffic@50@eu",
      "traffic@100@eu",
      "traffic@50@us",
      "traffic@100@us",
    ]);
  });

  it("a wave in approvalsBetween: the next wave bakes, deploys its candidate and waits for rollouts promote in its region", async () => {
    const w = await start("rollback-all", false, "approval", "eu");
    expect((await release(w, "v1", 1)).status).toBe("SUCCEEDED");
    await w.runtime.advanceBy(1_000);
    const arn = w.release("v2", DIGESTS.v2, 2);
    const us = w.passes[1] as LocalPass;
    let item = await us.item();
    for (let s = 0; s < 3600 && item?.phase !== "Paused"; s += 10) {
      await w.runtime.advanceBy(10_000);
      item = await us.item();
    }
    expect(item).toMatchObject({ phase: "Paused", waitingFor: "approval", weight: 0 });
    expect(item?.stepLabels[0]).toBe("us/approval: wait for rollouts promote");
    // rollouts waves reads each region's table: every wave, in wave order, with its step and weight.
    const shown = await runWithEnv(
      { ...cliEnv(us), ROLLOUTS_TABLE: "" },
      "waves",
      "shop",
      "--at",
      `eu-west-1=${w.passes[0]?.tableName}`,
      "--at",
      `us-east-1=${us.tableName}`,
    );
    expect(shown.code).toBe(0);
    const rows = shown.out.trim().split("\n");
    expect(rows[0]).toMatch(/^WAVE\s+REGION\s+STATUS\s+STEP\s+WEIGHT\s+STABLE\s+CANARY/);
    expect(rows[1]).toMatch(/^eu\s+eu-west-1\s+✔ Healthy\s+3\/3 eu\/100%\s+100\s+v2\s+-/);
    expect(rows[2]).toMatch(
      /^us\s+us-east-1\s+॥ Paused\s+0\/4 us\/approval: wait for rollouts promote\s+0\s+v1\s+v2/,
    );
    expect(rows).toHaveLength(3);
    // A region whose table lacks the rollout is named, not skipped.
    const missing = await runWithEnv(
      { ...cliEnv(us), ROLLOUTS_TABLE: "" },
      "waves",
      "shop",
      "--at",
      `eu-west-1=${w.passes[0]?.tableName}`,
      "--at",
      "ap-southeast-2=no-such-table",
    );
    expect(missing.code).not.toBe(0);
    expect(missing.err).toContain("ap-southeast-2");
    // Without --at, rollouts waves finds every pass from the coordinator shop-waves in the home
    // region: its definition names each pass's state machine, whose tag names its table.
    const home = { ...cliEnv(us), ROLLOUTS_TABLE: "", AWS_REGION: "eu-west-1" };
    const found = await runWithEnv(home, "waves", "shop");
    expect(found.err).toBe("");
    expect(found.code).toBe(0);
    // From a pass's region, with no table: its state machine's tag names the coordinator.
    const fromPass = await runWithEnv({ ...home, AWS_REGION: "us-east-1" }, "waves", "shop");
    expect(fromPass.err).toBe("");
    expect(fromPass.code).toBe(0);
    expect(fromPass.out).toBe(found.out);
    // From a region with neither, the command says so; --home-region names where to look.
    const elsewhere = { ...home, AWS_REGION: "ap-southeast-2" };
    const lost = await runWithEnv(elsewhere, "waves", "shop");
    expect(lost.code).toBe(2);
    expect(lost.err).toContain("no state machine shop-waves in this region");
    expect(lost.err).toContain("--home-region");
    const homed = await runWithEnv(elsewhere, "waves", "shop", "--home-region", "eu-west-1");
    expect(homed.err).toBe("");
    expect(homed.out).toBe(found.out);
    const wrongHome = await runWithEnv(elsewhere, "waves", "shop", "--home-region", "us-east-1");
    expect(wrongHome.code).toBe(2);
    expect(wrongHome.err).toContain("no state machine shop-waves in us-east-1");
    const badHome = await runWithEnv(elsewhere, "waves", "shop", "--home-region", "europe");
    expect(badHome.code).toBe(2);
    expect(badHome.err).toContain('--home-region "europe": expected a region');
    const lines = found.out.trim().split("\n");
    expect(lines[0]).toMatch(
      /^Coordinator: arn:aws:states:\S+:stateMachine:shop-waves, newest release shop-\w+-g2: RUNNING$/,
    );
    expect(lines[1]).toMatch(/^WAVE\s+REGION\s+STATUS\s+STEP\s+WEIGHT\s+STABLE\s+CANARY\s+MESSAGE$/);
    expect(lines[2]).toMatch(/^eu\s+eu-west-1\s+✔ Healthy\s+3\/3 eu\/100%\s+100\s+v2\s+-/);
    expect(lines[3]).toMatch(
      /^us\s+us-east-1\s+॥ Paused\s+0\/4 us\/approval: wait for rollouts promote\s+0\s+v1\s+v2/,
    );
    expect(lines).toHaveLength(4);
    // rollouts get in us-east-1 adds every wave, the coordinator found from the execution that started us.
    const got = await runWithEnv(cliEnv(us), "get", "shop");
    expect(got.code).toBe(0);
    expect(got.out).toMatch(/Step:\s+0\/4 \(us\/approval: wait for rollouts promote\)/);
    const section = got.out.split("\nWaves:\n")[1]?.trimEnd().split("\n") ?? [];
    expect(section.map((l) => l.trim())).toEqual(lines);
    // --home-region: the execution already names the coordinator; a value that is no region is refused.
    const gotHome = await runWithEnv(cliEnv(us), "get", "shop", "--home-region", "eu-west-1");
    expect(gotHome.out.split("\nWaves:\n")[1]).toBe(got.out.split("\nWaves:\n")[1]);
    const gotBad = await runWithEnv(cliEnv(us), "get", "shop", "--home-region", "eu west");
    expect(gotBad.code).toBe(2);
    expect(gotBad.err).toContain('--home-region "eu west": expected a region');
    // ROLLOUTS_TABLE naming a table this region lacks is only a hint; --table is not.
    const hinted = await runWithEnv({ ...home, ROLLOUTS_TABLE: "no-such-table" }, "waves", "shop");
    expect(hinted.code).toBe(0);
    expect(hinted.out).toBe(found.out);
    const given = await runWithEnv(cliEnv(us), "waves", "shop", "--table", "no-such-table");
    expect(given.code).toBe(2);
    expect(given.err).toContain('table "no-such-table" does not exist');
    // A rollout outside waves has no section, and rollouts waves names what it could not find.
    const none = await runWithEnv(home, "waves", "cart");
    expect(none.code).toBe(2);
    expect(none.err).toContain('no release in waves for "cart": no state machine cart-waves');
    const bad = await runWithEnv(cliEnv(us), "waves", "shop", "--at", "=x");
    expect(bad.code).toBe(2);
    expect(bad.err).toContain("--at");
    const eu = w.runtime.sfn.listExecutions({ stateMachineArn: w.passes[0]?.stateMachineArn ?? "" })[0];
    const usRun = w.runtime.sfn.listExecutions({ stateMachineArn: us.stateMachineArn })[0];
    // The bake of the eu wave came between the two.
    expect((usRun?.startDate ?? 0) - (eu?.stopDate ?? 0)).toBe(300_000);
    // rollouts get --json in us-east-1: the same rows as data.
    const json = await runWithEnv(cliEnv(us), "get", "shop", "--json");
    expect(json.code).toBe(0);
    const parsed = JSON.parse(json.out) as { item: { name: string }; waves: unknown };
    expect(parsed.item.name).toBe("shop");
    expect(parsed.waves).toEqual({
      coordinatorArn: w.coordinatorArn,
      release: { name: expect.stringMatching(/^shop-\w+-g2$/), status: "RUNNING" },
      passes: [
        {
          pass: "eu",
          region: "eu-west-1",
          account: "000000000000",
          table: w.passes[0]?.tableName,
          phase: "Healthy",
          step: 3,
          stepCount: 3,
          stage: "eu/100%",
          weight: 100,
          stable: "v2",
          canary: null,
          message: expect.any(String),
          problem: null,
        },
        {
          pass: "us",
          region: "us-east-1",
          account: "222222222222",
          table: us.tableName,
          phase: "Paused",
          step: 0,
          stepCount: 4,
          stage: "us/approval: wait for rollouts promote",
          weight: 0,
          stable: "v1",
          canary: "v2",
          message: "Approval: waiting for rollouts promote",
          problem: null,
        },
      ],
      problem: null,
    });
    // rollouts get --watch in us-east-1, driven in virtual time: promoted after the first frame,
    // eu's table deleted after the second. Every frame ends with the waves; eu's row then says
    // why it cannot be read, and the watch goes on until us is Healthy.
    const frames: string[] = [];
    let sleeps = 0;
    const watched = await withEnv(cliEnv(us), () =>
      getAction({ out: (t) => void frames.push(t), err: (t) => void frames.push(`ERR ${t}`) }, "shop", {
        watch: true,
        intervalMs: 1000,
        env: cliEnv(us),
        interrupt: () => () => {},
        waves: { now: () => w.runtime.clock.now() },
        poll: {
          maxFrames: 500,
          sleep: async () => {
            sleeps++;
            if (sleeps === 1) expect((await runWithEnv(cliEnv(us), "promote", "shop")).code).toBe(0);
            if (sleeps === 2) {
              await dynamo.client().send(new DeleteTableCommand({ TableName: w.passes[0]?.tableName }));
            }
            await w.runtime.advanceBy(10_000);
          },
        },
      }),
    );
    expect(watched).toBe(0);
    expect(frames.filter((f) => f.startsWith("ERR"))).toEqual([]);
    expect(frames.length).toBeGreaterThanOrEqual(3);
    const wavesOf = (frame: string) => frame.split("\nWaves:\n")[1]?.trimEnd().split("\n") ?? [];
    for (const frame of frames)
      expect(wavesOf(frame)[0]).toMatch(/^ {2}Coordinator: \S+:stateMachine:shop-waves, /);
    expect(frames[0]).toContain("Status:          ॥ Paused\n");
    expect(wavesOf(frames[0] as string)[3]).toMatch(/^ {2}us\s+us-east-1\s+॥ Paused\s+0\/4 us\/approval/);
    const last = frames.at(-1) as string;
    expect(last).toContain("Status:          ✔ Healthy\n");
    expect(wavesOf(last)[2]).toMatch(/^ {2}eu\s+eu-west-1\s+\? Unknown\s+.*ResourceNotFoundException/);
    expect(wavesOf(last)[3]).toMatch(/^ {2}us\s+us-east-1\s+✔ Healthy\s+4\/4 us\/100%\s+100\s+v2\s+-/);
    // A frame in between showed us at its bake after 50%, in its waves row too.
    expect(frames.some((f) => /^ {2}us\s+us-east-1\s+॥ Paused\s+2\/4 us\/pause: 1m\s+50\s/m.test(f))).toBe(
      true,
    );
    expect((await w.runtime.waitForExecution(arn)).status).toBe("SUCCEEDED");
    expect((await us.item())?.stableRevision?.tag).toBe("v2");
    // --watch --json of the settled rollout: one line, the waves in it, eu's row saying why.
    const line = await runWithEnv(cliEnv(us), "get", "shop", "--watch", "--json");
    expect(line.code).toBe(0);
    expect(line.out.trim().split("\n")).toHaveLength(1);
    const settled = JSON.parse(line.out) as {
      waves: { passes: { phase: string | null; problem: string | null }[] };
    };
    expect(settled.waves.passes[0]).toMatchObject({
      phase: null,
      problem: expect.stringContaining("ResourceNotFound"),
    });
    expect(settled.waves.passes[1]).toMatchObject({ phase: "Healthy", problem: null });
  });

  it("rollback-wave: the failed second wave returns to its stable version, the first keeps the release", async () => {
    const w = await start("rollback-wave", true, "rollback-wave");
    expect((await release(w, "v1", 1)).status).toBe("SUCCEEDED");
    const done = await release(w, "v2", 2);
    expect(done).toMatchObject({ status: "FAILED", error: "WaveFailed" });
    expect(await where(w)).toEqual([
      ["eu", "v2", "Healthy"],
      ["us", "v1", "Degraded"],
    ]);
    expect((await w.passes[1]?.item())?.weight).toBe(0);
    expect(JSON.parse(done.output ?? "null")).toBeNull();
    // A region that cannot be read (its table gone) is a row saying why; the others are shown.
    const { DeleteTableCommand } = await import("@aws-sdk/client-dynamodb");
    const admin = w.dynamo.client();
    await admin.send(new DeleteTableCommand({ TableName: w.passes[1]?.tableName }));
    admin.destroy();
    const eu = w.passes[0] as LocalPass;
    const shown = await runWithEnv({ ...cliEnv(eu), ROLLOUTS_TABLE: "" }, "waves", "shop");
    expect(shown.code).toBe(0);
    const rows = shown.out.trim().split("\n");
    expect(rows[0]).toMatch(/newest release shop-\w+-g2: FAILED$/);
    expect(rows[2]).toMatch(/^eu\s+eu-west-1\s+✔ Healthy\s+3\/3 eu\/100%\s+100\s+v2\s+-/);
    expect(rows[3]).toMatch(/^us\s+us-east-1\s+\? Unknown\s+-\s+-\s+-\s+-\s+ResourceNotFoundException: /);
  });

  it("rollback-all: the failed second wave returns to stable, and the promoted first wave goes back to its previous version", async () => {
    const w = await start("rollback-all", true, "rollback-all");
    expect((await release(w, "v1", 1)).status).toBe("SUCCEEDED");
    const done = await release(w, "v2", 2);
    expect(done).toMatchObject({ status: "FAILED", error: "WaveFailed" });
    expect(await where(w)).toEqual([
      ["eu", "v1", "Healthy"],
      ["us", "v1", "Degraded"],
    ]);
    const eu = await w.passes[0]?.item();
    expect(eu?.weight).toBe(100);
    // eu's rollback skipped the steps (a rollback to a revision in its history) and kept v2 in its history.
    expect(eu?.history.map((h) => h.tag)).toEqual(["v1", "v2", "v1"]);
    const undo = w.runtime.sfn
      .listExecutions({ stateMachineArn: w.passes[0]?.stateMachineArn ?? "" })
      .find((e) => e.name.startsWith("undo-"));
    expect(undo?.status).toBe("SUCCEEDED");
    expect((undo?.stopDate ?? 0) - (undo?.startDate ?? 0)).toBeLessThan(60_000);
  });

  it("a push to the repository starts the whole release through the home rule of RolloutWaves", async () => {
    const w = await start("rollback-all", false, "push");
    expect((await pushed(w, "v1", DIGESTS.v1)).status).toBe("SUCCEEDED");
    const done = await pushed(w, "v2", DIGESTS.v2);
    expect(done.status).toBe("SUCCEEDED");
    expect(await where(w)).toEqual([
      ["eu", "v2", "Healthy"],
      ["us", "v2", "Healthy"],
    ]);
    // The input the rule's transformer built: the image in the home registry, by digest.
    expect(JSON.parse(done.input)).toMatchObject({
      rollout: "shop",
      revision: {
        repository: "shop",
        image: `000000000000.dkr.ecr.eu-west-1.amazonaws.com/shop@${DIGESTS.v2}`,
        digest: DIGESTS.v2,
        tag: "v2",
      },
      trigger: { generation: 1 },
    });
    expect((await w.passes[1]?.item())?.stableRevision).toMatchObject({ digest: DIGESTS.v2, tag: "v2" });
    // Each region ran its rollout under the coordinator's execution name.
    const name = done.executionArn.split(":").at(-1);
    for (const p of w.passes) {
      const run = w.runtime.sfn
        .listExecutions({ stateMachineArn: p.stateMachineArn })
        .find((e) => e.name === name);
      expect(run?.status).toBe("SUCCEEDED");
    }
    expect(w.runtime.bus.failures).toEqual([]);
  });

  it("a push whose tag the tagPattern does not match starts nothing", async () => {
    const w = await start("rollback-all", false, "pattern", "", "v*");
    await w.push("latest", DIGESTS.v1);
    await w.runtime.runUntilIdle();
    expect(coordinatorRuns(w)).toEqual([]);
    expect(await where(w)).toEqual([
      ["eu", null, null],
      ["us", null, null],
    ]);
    // …and a push by digest only has no tag for the pattern to match.
    await w.push(null, DIGESTS.v4);
    await w.runtime.runUntilIdle();
    expect(coordinatorRuns(w)).toEqual([]);
    expect((await pushed(w, "v1", DIGESTS.v1)).status).toBe("SUCCEEDED");
  });

  it("a push by digest only (no image-tag in ECR's event) releases that digest, with no tag", async () => {
    const w = await start("rollback-all", false, "digest");
    expect((await pushed(w, "v1", DIGESTS.v1)).status).toBe("SUCCEEDED");
    const done = await pushed(w, null, DIGESTS.v4);
    expect(done.status).toBe("SUCCEEDED");
    expect(JSON.parse(done.input).revision).toEqual({
      repository: "shop",
      image: `000000000000.dkr.ecr.eu-west-1.amazonaws.com/shop@${DIGESTS.v4}`,
      digest: DIGESTS.v4,
      tag: null,
    });
    for (const p of w.passes) {
      const item = await p.item();
      expect(item?.phase).toBe("Healthy");
      expect(item?.stableRevision).toMatchObject({ digest: DIGESTS.v4, tag: null });
    }
  });

  it("a newer push takes a pass over: the older release stops as superseded and rolls nothing back", async () => {
    const w = await start("rollback-all", false, "superseded", "eu");
    expect((await pushed(w, "v1", DIGESTS.v1)).status).toBe("SUCCEEDED");
    const older = await pushOnly(w, "v2", DIGESTS.v2);
    const [eu, us] = w.passes as [LocalPass, LocalPass];
    // The older release promoted eu and waits for the approval of us.
    await until(w, async () => (await us.item())?.waitingFor === "approval");
    expect((await eu.item())?.stableRevision?.tag).toBe("v2");
    const newer = await pushOnly(w, "v3", DIGESTS.v3);
    const newerName = newer.split(":").at(-1) as string;
    // The newer release runs eu, bakes, and takes us over from the older one.
    await until(w, async () => (await us.item())?.executionArn?.endsWith(`:${newerName}`) === true);
    expect(await w.runtime.waitForExecution(older)).toMatchObject({
      status: "FAILED",
      error: "WaveSuperseded",
    });
    // The older release returned nothing: eu keeps the newer release's version.
    expect((await eu.item())?.stableRevision?.tag).toBe("v3");
    expect(
      w.runtime.sfn
        .listExecutions({ stateMachineArn: eu.stateMachineArn })
        .filter((e) => e.name.startsWith("undo-")),
    ).toEqual([]);
    await until(w, async () => (await us.item())?.waitingFor === "approval");
    expect((await runWithEnv(cliEnv(us), "promote", "shop")).code).toBe(0);
    expect((await w.runtime.waitForExecution(newer)).status).toBe("SUCCEEDED");
    expect(await where(w)).toEqual([
      ["eu", "v3", "Healthy"],
      ["us", "v3", "Healthy"],
    ]);
  });

  it("an older push delivered after a newer one's release took a region: the older release takes nothing and ends superseded", async () => {
    const w = await start("rollback-all", false, "older-late", "eu");
    expect((await pushed(w, "v1", DIGESTS.v1)).status).toBe("SUCCEEDED");
    const [eu, us] = w.passes as [LocalPass, LocalPass];
    await w.runtime.advanceBy(120_000);
    const newer = await pushOnly(w, "v3", DIGESTS.v3);
    // The push's time, as the home rule's transformer gave it (ECR's event `time`).
    const pushedAt = Date.parse(JSON.parse(w.runtime.sfn.describeExecution(newer).input).trigger.eventTime);
    // The newer release promoted eu and waits for the approval of us.
    await until(w, async () => (await us.item())?.waitingFor === "approval");
    expect((await eu.item())?.stableRevision?.tag).toBe("v3");
    const before = {
      eu: await eu.item(),
      us: await us.item(),
      proxies: regions.map((r) => r.proxy.config()),
    };
    const bus = w.runtime.bus.events.filter((e) => e.event.source === "sfn-rollouts").length;
    // v2 was pushed a minute before v3 (after v1), but its event arrives now (EventBridge does
    // not keep order).
    const older = await pushOnly(w, "v2", DIGESTS.v2, new Date(pushedAt - 60_000));
    expect(await w.runtime.waitForExecution(older)).toMatchObject({
      status: "FAILED",
      error: "WaveSuperseded",
    });
    const olderName = older.split(":").at(-1) as string;
    const refused = w.runtime.sfn
      .listExecutions({ stateMachineArn: eu.stateMachineArn })
      .find((e) => e.name === olderName);
    expect(refused).toMatchObject({ status: "FAILED", error: "ExecutionSuperseded" });
    // Nothing changed: not the items, not the weights, no lifecycle event; us still waits for
    // its approval, and the older release started nothing in us and undid nothing.
    expect({
      eu: await eu.item(),
      us: await us.item(),
      proxies: regions.map((r) => r.proxy.config()),
    }).toEqual(before);
    expect(w.runtime.bus.events.filter((e) => e.event.source === "sfn-rollouts").length).toBe(bus);
    expect(
      w.runtime.sfn
        .listExecutions({ stateMachineArn: us.stateMachineArn })
        .filter((e) => e.name === olderName || e.name.startsWith("undo-")),
    ).toEqual([]);
    expect(
      w.runtime.sfn
        .listExecutions({ stateMachineArn: eu.stateMachineArn })
        .filter((e) => e.name.startsWith("undo-")),
    ).toEqual([]);
    expect((await runWithEnv(cliEnv(us), "promote", "shop")).code).toBe(0);
    expect((await w.runtime.waitForExecution(newer)).status).toBe("SUCCEEDED");
    expect(await where(w)).toEqual([
      ["eu", "v3", "Healthy"],
      ["us", "v3", "Healthy"],
    ]);
    // Both regions serve the newer release with all the traffic.
    expect(regions.map((r) => [r.proxy.config()?.stableVersion, r.proxy.config()?.weight])).toEqual([
      ["v3", 0],
      ["v3", 0],
    ]);
  });

  it("two pushes in the same second: the release delivered later takes every region", async () => {
    const w = await start("rollback-all", false, "same-second");
    expect((await pushed(w, "v1", DIGESTS.v1)).status).toBe("SUCCEEDED");
    const [eu, us] = w.passes as [LocalPass, LocalPass];
    const second = new Date(Math.ceil((w.runtime.clock.now() + 1) / 1000) * 1000);
    const first = await pushOnly(w, "v2", DIGESTS.v2, second);
    await until(w, async () => (await eu.item())?.currentRevision?.tag === "v2", 60_000);
    await w.runtime.advanceBy(300);
    const later = await pushOnly(w, "v3", DIGESTS.v3, second);
    expect(await w.runtime.waitForExecution(first)).toMatchObject({
      status: "FAILED",
      error: "WaveSuperseded",
    });
    expect((await w.runtime.waitForExecution(later)).status).toBe("SUCCEEDED");
    expect(await where(w)).toEqual([
      ["eu", "v3", "Healthy"],
      ["us", "v3", "Healthy"],
    ]);
    // Each region recorded the push of the release that drives it, with when its coordinator started.
    const started = w.runtime.sfn.describeExecution(later).startDate;
    for (const p of [eu, us]) {
      expect((await p.item())?.startedBy).toMatchObject({ eventTime: second.getTime(), releasedAt: started });
    }
  });

  it("rollback-all of an older release leaves alone a pass a newer release has taken over", async () => {
    const w = await start("rollback-all", true, "newer-owns");
    expect((await pushed(w, "v1", DIGESTS.v1)).status).toBe("SUCCEEDED");
    const older = await pushOnly(w, "v2", DIGESTS.v2);
    const [eu, us] = w.passes as [LocalPass, LocalPass];
    // eu is promoted; us waits for its v2 candidate, which never gets ready: v3 is pushed shortly
    // before us gives up, so the older release rolls back while the newer one runs eu.
    const deadline = async () =>
      // The local proxy plugin's own state, inside the plugin target's.
      ((await us.item())?.targetState as { state?: { deadlineAt?: number } } | null)?.state?.deadlineAt ??
      undefined;
    await until(w, async () => (await deadline()) !== undefined);
    expect((await eu.item())?.stableRevision?.tag).toBe("v2");
    await w.runtime.advanceTo(((await deadline()) as number) - 20_000);
    expect(w.runtime.sfn.describeExecution(older).status).toBe("RUNNING");
    const newer = await pushOnly(w, "v3", DIGESTS.v3);
    expect(await w.runtime.waitForExecution(older)).toMatchObject({ status: "FAILED", error: "WaveFailed" });
    expect((await w.runtime.waitForExecution(newer)).status).toBe("SUCCEEDED");
    expect(await where(w)).toEqual([
      ["eu", "v3", "Healthy"],
      ["us", "v3", "Healthy"],
    ]);
    // The older release's undo of eu was refused: eu never went back to v1.
    const undo = w.runtime.sfn
      .listExecutions({ stateMachineArn: eu.stateMachineArn })
      .find((e) => e.name.startsWith("undo-"));
    expect(undo).toMatchObject({ status: "FAILED", error: "ExecutionSuperseded" });
    expect((await eu.item())?.history.map((h) => h.tag)).not.toContain(undefined);
    expect((await eu.item())?.history.map((h) => h.tag).slice(-1)).toEqual(["v3"]);
  });
});
