import type { Command } from "commander";
import { type RegisterCommand, UsageError } from "../io.ts";

/**
 * `rollouts dashboard` (a local web UI over the same store as `rollouts get`, with the operating
 * commands as buttons) and `rollouts report` (one rollout's page as a self-contained HTML file).
 * Registration only: the server, the renderer and the AWS SDK load when one of them runs.
 */
export const registerDashboard: RegisterCommand = (program: Command, io, done) => {
  const actions = () => import("./dashboard-actions.ts");
  const table = "DynamoDB table of the rollouts (default: $ROLLOUTS_TABLE)";

  program
    .command("dashboard")
    .description(
      "serve a web UI on 127.0.0.1: the rollouts, each one's steps, weight and analysis charts, events, and Promote / Abort / Retry buttons",
    )
    .option("--table <name>", table)
    .option("-p, --port <port>", "port on 127.0.0.1 (0 picks a free one)", "3100")
    .option("--interval <seconds>", "seconds between the pages' refreshes", "2")
    .action(async (opts: { table?: string; port: string; interval: string }) => {
      const port = portNumber(opts.port);
      const refreshMs = seconds(opts.interval) * 1000;
      done(await (await actions()).dashboardAction(io, { ...opts, port, refreshMs }));
    });

  program
    .command("report")
    .description(
      "write a rollout's page (steps, weight and analysis charts as inline SVG, events) as one self-contained HTML file",
    )
    .argument("<name>", "rollout name")
    .option("--table <name>", table)
    .option("-o, --out <file>", "write the HTML here instead of to standard output")
    .action(async (name: string, opts: { table?: string; out?: string }) => {
      done(await (await actions()).reportAction(io, name, opts));
    });
};

function portNumber(text: string): number {
  const port = Number(text);
  if (!/^\d+$/.test(text.trim()) || !Number.isInteger(port) || port > 65535) {
    throw new UsageError(`--port must be a whole number from 0 to 65535, got "${text}"`);
  }
  return port;
}

function seconds(text: string): number {
  const value = Number(text);
  if (!Number.isFinite(value) || value < 0.2 || value > 3600) {
    throw new UsageError(`--interval must be a number of seconds from 0.2 to 3600, got "${text}"`);
  }
  return value;
}
