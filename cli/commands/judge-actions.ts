import { readFile } from "node:fs/promises";
import { type JudgeReport, judge, judgeInputSchema } from "../../functions/judges/index.ts";
import { formatIssues } from "../../statemachine/problems.ts";
import { Exit, type Io, UsageError } from "../io.ts";

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
 * The action of `rollouts judge`, apart from its registration so that the judges (and their
 * statistics libraries) load only when it runs. Resolves to the decision's exit code.
 */
export async function judgeAction(io: Io, file: string, opts: { json?: boolean }): Promise<number> {
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
  return exitCodeFor(report.decision);
}
