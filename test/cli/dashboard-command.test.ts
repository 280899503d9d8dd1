import { mkdtempSync, readFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { run } from "@sfn-rollouts/test-support/cli";
import { type DemoRollouts, startDemoRollouts } from "@sfn-rollouts/test-support/demo-rollouts";
import { type DynaliteHarness, startDynalite } from "@sfn-rollouts/test-support/dynalite";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { z } from "zod";
import { dashboardAction } from "../../cli/commands/dashboard-actions.ts";
import type { Io } from "../../cli/io.ts";
import { DynamoRolloutStore } from "../../functions/store/dynamodb.ts";

/**
 * `rollouts report` and `rollouts dashboard` as a user runs them: configured through
 * `ROLLOUTS_TABLE` and `AWS_ENDPOINT_URL_DYNAMODB` only, reading the demo's rollouts (run in the
 * embedded runtime, then copied into a dynalite table) through the CLI's own SDK clients.
 */

const TABLE = "rollouts-dashboard";
let demo: DemoRollouts;
let dynalite: DynaliteHarness;
let env: Record<string, string>;

beforeAll(async () => {
  demo = await startDemoRollouts();
  dynalite = await startDynalite(TABLE);
  const table = new DynamoRolloutStore({ client: dynalite.client(), tableName: TABLE, clock: demo.clock });
  for (const item of await demo.store.list()) {
    await table.save(item, null);
    for (const stored of await demo.store.listRuns(item.name, z.unknown())) {
      await table.saveRun(item.name, stored.runId, stored.run, null);
      for (const m of await demo.store.listMeasurements(item.name, stored.runId, z.unknown())) {
        await table.putMeasurement({ ...m, ttlSeconds: 10 * 365 * 24 * 3600 });
      }
    }
  }
  env = {
    ROLLOUTS_TABLE: TABLE,
    AWS_ENDPOINT_URL_DYNAMODB: dynalite.endpoint,
    AWS_ENDPOINT_URL_SFN: demo.demo.runtime.facadeUrl,
    AWS_REGION: "us-east-1",
    AWS_ACCESS_KEY_ID: "local",
    AWS_SECRET_ACCESS_KEY: "local",
  };
  for (const [key, value] of Object.entries(env)) vi.stubEnv(key, value);
}, 120_000);

afterAll(async () => {
  vi.unstubAllEnvs();
  await dynalite?.close();
  await demo?.close();
});

describe("rollouts report NAME [--out FILE]", () => {
  it("writes the rollout page as one HTML file with inline SVG charts and no script", async () => {
    const file = join(mkdtempSync(join(tmpdir(), "report-")), "demo.html");
    const result = await run("report", "demo", "--out", file);
    expect(result.err).toBe("");
    expect(result.code).toBe(0);
    expect(result.out).toMatch(new RegExp(`^wrote ${file} \\(\\d+ bytes\\)\\n$`));
    const page = readFileSync(file, "utf8");
    expect(page).toMatch(/^<!doctype html>/);
    expect(page).toContain("Rollout aborted update to revision 4: Gate &quot;errors&quot; rolled back");
    expect(page).toContain('class="chart"');
    expect(page).not.toMatch(/<script|<link/);
  });

  it("prints the page without --out", async () => {
    const result = await run("report", "demo-approval");
    expect(result.code).toBe(0);
    expect(result.out).toContain("<title>Rollout demo-approval</title>");
  });

  it("names an unknown rollout and a file it cannot write, exit 2", async () => {
    const missing = await run("report", "nope");
    expect(missing.code).toBe(2);
    expect(missing.err).toBe(
      `rollouts: rollout "nope" not found in table "${TABLE}" (rollouts list shows the rollouts it holds)\n`,
    );
    const unwritable = await run("report", "demo", "--out", "/nonexistent-dir/x.html");
    expect(unwritable.code).toBe(2);
    expect(unwritable.err).toMatch(/^rollouts: cannot write \/nonexistent-dir\/x\.html: ENOENT/);
  });
});

describe("rollouts dashboard [--port P]", () => {
  function recorder(): Io & { lines: string[] } {
    const lines: string[] = [];
    return { lines, out: (t) => lines.push(t), err: (t) => lines.push(`err: ${t}`) };
  }

  it("serves the table's rollouts on 127.0.0.1 until interrupted", async () => {
    const io = recorder();
    let stop: AbortController | undefined;
    const done = dashboardAction(io, {
      port: 0,
      refreshMs: 1000,
      interrupt: (controller) => {
        stop = controller;
        return () => {};
      },
    });
    await vi.waitFor(() => expect(io.lines[0]).toMatch(/^rollouts dashboard on http:\/\/127\.0\.0\.1:\d+ /), {
      timeout: 10_000,
    });
    const url = /(http:\S+)/.exec(io.lines[0] as string)?.[1] as string;
    const list = await (await fetch(url)).text();
    expect(list).toContain('<a href="/rollouts/demo">demo</a>');
    expect(list).toContain('<a href="/rollouts/demo-approval">demo-approval</a>');
    stop?.abort();
    expect(await done).toBe(0);
    await expect(fetch(url)).rejects.toThrow();
  });

  it("names a port that is taken, exit 2", async () => {
    const taken = createServer();
    await new Promise<void>((resolve) => taken.listen(0, "127.0.0.1", resolve));
    const port = (taken.address() as { port: number }).port;
    const io = recorder();
    try {
      expect(await dashboardAction(io, { port, refreshMs: 1000, interrupt: () => () => {} })).toBe(2);
    } finally {
      taken.close();
    }
    expect(io.lines).toEqual([
      `err: rollouts: port ${port} on 127.0.0.1 is in use: pass --port with another port (0 picks a free one)`,
    ]);
  });

  it.each([
    [["--port", "http"], '--port must be a whole number from 0 to 65535, got "http"'],
    [["--port", "70000"], '--port must be a whole number from 0 to 65535, got "70000"'],
    [["--interval", "0"], '--interval must be a number of seconds from 0.2 to 3600, got "0"'],
  ])("refuses %j with one line, exit 2", async (args, message) => {
    const result = await run("dashboard", ...args);
    expect(result.code).toBe(2);
    expect(result.err).toBe(`rollouts: ${message}\n`);
  });
});
