import { writeFileSync } from "node:fs";
import type { AwsOptions } from "../aws.ts";
import { asset } from "../dashboard/assets.ts";
import { loadPageView } from "../dashboard/load.ts";
import { renderRolloutPage } from "../dashboard/page.ts";
import { DashboardListenError, startDashboard } from "../dashboard/server.ts";
import { Exit } from "../exit-codes.ts";
import type { Io } from "../io.ts";
import { printable } from "../terminal.ts";
import { type CommonOptions, type Interrupt, onSigint, withAws } from "./operate-actions.ts";

/**
 * The actions of `rollouts dashboard` and `rollouts report`, apart from their registration so
 * that the server and the AWS SDK load only when one of them runs. Both read through the
 * operating commands' composition root (`cli/aws.ts`) and failure reporting (`withAws`).
 */

export interface DashboardCommandOptions extends CommonOptions {
  port: number;
  refreshMs: number;
  env?: AwsOptions["env"];
  /** Ctrl-C stops the server; tests pass their own. */
  interrupt?: Interrupt;
}

/** `rollouts dashboard [--port P]`: serves until Ctrl-C. */
export function dashboardAction(io: Io, options: DashboardCommandOptions) {
  return withAws(io, options, async (deps) => {
    const controller = new AbortController();
    const release = (options.interrupt ?? onSigint)(controller);
    try {
      let dashboard: Awaited<ReturnType<typeof startDashboard>>;
      try {
        dashboard = await startDashboard({
          deps,
          port: options.port,
          refreshMs: options.refreshMs,
          log: (line) => io.err(line),
        });
      } catch (error) {
        if (!(error instanceof DashboardListenError)) throw error;
        io.err(`rollouts: ${printable(error.message)}`);
        return Exit.badInput;
      }
      io.out(`rollouts dashboard on ${dashboard.url} (Ctrl-C stops it)`);
      if (!controller.signal.aborted) {
        await new Promise<void>((resolve) => controller.signal.addEventListener("abort", () => resolve()));
      }
      await dashboard.close();
      return Exit.ok;
    } finally {
      release();
    }
  });
}

/** `rollouts report NAME [--out FILE]`: the rollout page as one HTML file, no script. */
export function reportAction(
  io: Io,
  name: string,
  options: CommonOptions & { out?: string; env?: AwsOptions["env"] },
) {
  return withAws(io, options, async (deps) => {
    const view = await loadPageView(deps, name);
    const page = renderRolloutPage(view, {
      now: deps.clock.now(),
      mode: { kind: "report", css: asset("dashboard.css") },
    });
    if (options.out === undefined) {
      io.out(page);
      return Exit.ok;
    }
    try {
      writeFileSync(options.out, page);
    } catch (error) {
      io.err(printable(`rollouts: cannot write ${options.out}: ${(error as Error).message}`));
      return Exit.badInput;
    }
    io.out(printable(`wrote ${options.out} (${Buffer.byteLength(page)} bytes)`));
    return Exit.ok;
  });
}
