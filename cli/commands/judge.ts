import { readFile } from "node:fs/promises";
import type { Command } from "commander";
import { type JudgeReport, judge, judgeInputSchema } from "../../functions/judges/index.ts";
import { formatIssues } from "../../statemachine/problems.ts";
import { Exit, type RegisterCommand, UsageError } from "../io.ts";

/** Exit code of a decision: 0 promote, 1 rollback, 3 hold (the codes of every `rollouts` command). */
export function exitCodeFor(decision: JudgeReport["decision"]): number {
  if (decision === "promote") return Exit.ok;
  if (decision === "rollback") return Exit.negative;
  return Exit.hold;
}

/** Reads and validates a judge file; every problem is a {@link UsageError} naming the file and the field path. */
export async function loadJudgeFile(file: string) {
  let text: string;
  try {
    text = await readFile(file, "utf8");
  } catch (error) {
    throw new UsageError(`${file}: cannot read: ${(error as Error).message}`);
  }
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (error) {
    throw new UsageError(`${file}: not valid JSON: ${(error as Error).message}`);
  }
  const parsed = judgeInputSchema.safeParse(raw);
  if (!parsed.success) {
    throw new UsageError(`${file}: ${formatIssues(parsed.error, "(file)")}`);
  }
  return parsed.data;
}

/**
 * `rollouts judge FILE [--json]`: runs the statistical checks of a file (candidate against
 * primary) and prints the decision. The exit code is the decision, so a pipeline step or a
 * Kubernetes Job can gate on it: 0 promote, 1 rollback, 3 hold, 2 input it cannot use.
 */
export const registerJudge: RegisterCommand = (program: Command, io, done) => {
  program
    .command("judge")
    .description(
      "compare a candidate with the primary: Mann-Whitney, proportion and sequential tests, absolute p95 and bad-rate guards; exit 0 promote, 1 rollback, 3 hold, 2 bad input",
    )
    .argument("<file>", 'JSON file: {"checks": [{"name", "test", "candidate", "primary", ...}]}')
    .option("--json", "print the report as JSON")
    .action(async (file: string, opts: { json?: boolean }) => {
      const input = await loadJudgeFile(file);
      const report = judge(input.checks);
      if (opts.json) {
        const { checks, decision } = report;
        io.out(
          JSON.stringify(
            {
              decision,
              checks: checks.map(({ name, test, statistic, z, pValue, effect, verdict, message, guard }) => ({
                name,
                test,
                statistic,
                z,
                pValue,
                effect,
                guard,
                verdict,
                message,
              })),
            },
            null,
            2,
          ),
        );
      } else {
        io.out(`decision: ${report.decision}`);
        for (const check of report.checks) io.out(`  ${check.message}`);
      }
      done(exitCodeFor(report.decision));
    });
};
