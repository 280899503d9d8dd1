/**
 * Benchmarks of the workflow on the embedded runtime: the history a rollout of the reference canary
 * writes (it must not grow with the number of measurements: every wait is a task token),
 * the time from a failing measurement to the weight back at 0, and the demo's wall time.
 */
import { GetExecutionHistoryCommand, ListExecutionsCommand } from "@aws-sdk/client-sfn";
import type { LambdaHandler } from "../local/aws/lambda.ts";
import { runDemo } from "../local/demo/main.ts";
import { startDynamo } from "../local/dynamo.ts";
import { type LocalScenario as Scenario, startScenario } from "../test/integration/harness.ts";
import type { Bench } from "./run.ts";

const done =
  (tag: string) => (item: { currentRevision: { tag: string | null } | null; phase: string } | undefined) =>
    item?.currentRevision?.tag === tag && (item.phase === "Healthy" || item.phase === "Degraded");

async function history(s: Scenario, digestPart: string): Promise<{ events: number; transitions: number }> {
  const list = await s.sfn.send(new ListExecutionsCommand({ stateMachineArn: s.stack.stateMachineArn }));
  const execution = list.executions?.find((e) => e.name?.includes(digestPart));
  const out = await s.sfn.send(
    new GetExecutionHistoryCommand({ executionArn: execution?.executionArn, maxResults: 1000 }),
  );
  const events = out.events ?? [];
  return {
    events: events.length,
    transitions: events.filter((e) => e.type?.endsWith("StateEntered")).length,
  };
}

export const bench: Bench = {
  name: "runtime",
  async run() {
    process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED = "true";
    const lines: string[] = [];
    const dynamo = await startDynamo("dynalite");
    try {
      lines.push(
        "history of one promoted rollout of the reference canary (v1 stable, then v2 through 5 steps):",
      );
      lines.push("  measurements per analysis  measurements taken  history events  state transitions");
      for (const count of [2, 10, 50]) {
        const s = await startScenario({ dynamo, tableName: `bench-${count}`, count });
        try {
          await s.push("v1");
          await s.drive(done("v1"));
          await s.push("v2");
          const item = await s.drive(done("v2"), { maxSeconds: 1200 });
          if (item?.phase !== "Healthy") throw new Error(`v2 was not promoted: ${item?.message}`);
          const h = await history(s, "2222");
          const taken = s.stack.metrics.points.filter((p) => p.name === "Measurements").length;
          lines.push(
            `  ${String(count).padStart(25)}  ${String(taken).padStart(18)}  ${String(h.events).padStart(14)}  ${String(h.transitions).padStart(17)}`,
          );
        } finally {
          await s.close();
        }
      }

      const latencies: number[] = [];
      for (let i = 0; i < 5; i++) {
        let failedAt = 0;
        let zeroAt = 0;
        const wrap =
          (name: string, handler: LambdaHandler): LambdaHandler =>
          async (event, context) => {
            const result = await handler(event, context);
            if (name === "resume" && failedAt === 0 && JSON.stringify(result).includes("Failed"))
              failedAt = performance.now();
            if (name === "abort") zeroAt = performance.now();
            return result;
          };
        const s = await startScenario({ dynamo, tableName: `bench-abort-${i}`, wrap });
        try {
          await s.push("v1");
          await s.drive(done("v1"));
          await s.push("v3");
          const item = await s.drive(done("v3"));
          if (item?.phase !== "Degraded" || s.proxy.config()?.weight !== 0)
            throw new Error("v3 was not aborted");
          latencies.push(zeroAt - failedAt);
        } finally {
          await s.close();
        }
      }
      latencies.sort((a, b) => a - b);
      lines.push(
        `failing measurement → weight 0 (token answered, Choice, Abort, proxy reconfigured), 5 runs: median ${latencies[2]?.toFixed(1)} ms, max ${latencies[4]?.toFixed(1)} ms`,
      );
    } finally {
      await dynamo.close();
    }

    const demo = await runDemo({ print: () => undefined });
    lines.push(
      `demo (npm start, ${demo.metrics === "prometheus" ? "with Prometheus" : "proxy samples"}): ${demo.seconds.toFixed(1)} s wall time, outcome ${demo.ok ? "as expected" : "NOT as expected"}`,
    );
    if (!demo.ok) process.exitCode = 1;
    return lines;
  },
};
