import type { RolloutItem } from "../../functions/store/schema.ts";
import type { ExecutionFacts } from "./executions.ts";
import type { Decision, ExecutionStatus, NextCommand, Verdict } from "./model.ts";

/**
 * The commands to run next, chosen from the verdict: each exact (the rollout's name, the run's
 * id, the versions) with why. Pure.
 */

export interface NextContext {
  verdict: Verdict;
  decision: Decision;
  facts: ExecutionFacts;
  item: RolloutItem;
  execution: ExecutionStatus | null;
}

/** A word a shell takes as one argument: as it is when it is plain, else single-quoted. */
export function shellWord(text: string): string {
  return /^[A-Za-z0-9_./:=@%+-]+$/.test(text) ? text : `'${text.replace(/'/g, `'\\''`)}'`;
}

const command = (parts: string[], why: string): NextCommand => ({
  command: parts.map((p, i) => (i < 2 ? p : shellWord(p))).join(" "),
  why,
});

export function nextCommands(ctx: NextContext): NextCommand[] {
  const { facts, item } = ctx;
  const name = item.name;
  if (!facts.current) return [...analysisCommands(ctx), earlier(ctx)];
  const watch = command(["rollouts", "get", name, "--watch"], "follow the rollout as it goes on");
  switch (ctx.verdict.kind) {
    case "aborted-by-analysis":
      return [
        ...analysisCommands(ctx),
        retry(ctx, "once the cause is fixed, or the analysis is shown wrong"),
      ];
    case "aborted-by-person":
    case "aborted-by-alarm":
    case "aborted-by-hook":
      return [...analysisCommands(ctx), retry(ctx, "once what stopped it is resolved")];
    case "degraded-by-target-fault":
      return [retry(ctx, "once the target's fault named above is fixed (the same steps run again)")];
    case "paused-for-person":
      return [
        ...analysisCommands(ctx),
        command(["rollouts", "promote", name], "continue: the wait ends and the next step runs"),
        command(
          ["rollouts", "abort", name, "--reason", "stopped after triage"],
          "stop: traffic back to the stable revision",
        ),
      ];
    case "paused-by-drift":
      return [
        command(
          ["rollouts", "promote", name],
          "the step runs again and overwrites the weights someone else set",
        ),
        command(
          ["rollouts", "abort", name, "--reason", "weights changed outside the rollout"],
          "go back to the stable revision",
        ),
      ];
    case "hung":
      return hungCommands(ctx, watch);
    case "healthy":
      return healthyCommands(ctx);
    default:
      return [watch];
  }
}

function retry({ item, facts }: NextContext, when: string): NextCommand {
  return command(
    ["rollouts", "retry", item.name],
    `${when}: runs ${facts.revision === null ? "the aborted revision" : `revision ${facts.revision}`}'s steps again`,
  );
}

/** Re-deciding the deciding run's recorded measurements, and running its templates again now. */
function analysisCommands({ decision, facts, item }: NextContext): NextCommand[] {
  const stored = facts.runs.find((r) => r.runId === decision.runId);
  if (
    !stored ||
    (decision.by !== "metric" && decision.by !== "gate" && stored.run.run.phase !== "Inconclusive")
  )
    return [];
  const versions = [
    ...(facts.image ? ["--latest", facts.image] : []),
    ...(facts.stable ? ["--stable", facts.stable] : []),
  ];
  const templates = stored.run.templates.map((t) => `"${t}"`).join(", ");
  return [
    command(
      ["rollouts", "replay", item.name, "--analysis", stored.runId],
      "decide its recorded measurements again (add --template FILE to try a changed AnalysisTemplate)",
    ),
    command(
      ["rollouts", "analyze", "FILE", ...versions],
      `run AnalysisTemplate ${templates} against its providers now (FILE: the file that holds it; add --arg NAME=VALUE for its args)`,
    ),
  ];
}

/** An earlier execution: its analysis can still be looked at; what to do now is the current one's. */
function earlier({ item }: NextContext): NextCommand {
  return command(
    ["rollouts", "triage", item.name],
    `the rollout has moved on (now ${item.currentRevision ? `revision ${item.currentRevision.revision}` : "another revision"}, ${item.phase}): triage what drives it now`,
  );
}

function hungCommands(ctx: NextContext, watch: NextCommand): NextCommand[] {
  const { decision, item, execution, facts } = ctx;
  const name = item.name;
  if (decision.causes.some((c) => c.kind === "execution-ended")) {
    return [
      command(
        [
          "aws",
          "stepfunctions",
          "get-execution-history",
          "--execution-arn",
          facts.arn ?? "ARN",
          "--reverse-order",
          "--max-items",
          "20",
        ],
        `why the execution ended ${execution?.status ?? ""}: its last states; a new push of the image takes the rollout over`,
      ),
    ];
  }
  if (item.waitingFor === "pause") {
    return [command(["rollouts", "promote", name], "end the pause now: its Timer firing is overdue"), watch];
  }
  return [
    command(
      ["rollouts", "abort", name, "--reason", "analysis timer overdue"],
      "end the wait now: traffic back to the stable revision",
    ),
    command(
      ["rollouts", "promote", name, "--full"],
      "or skip the remaining steps and promote without the analysis's evidence",
    ),
    { ...watch, why: "or wait: a late firing ends the hang, and the step's timeout aborts it otherwise" },
  ];
}

function healthyCommands({ verdict, item, facts, decision }: NextContext): NextCommand[] {
  const previous = item.history.at(-2);
  const out: NextCommand[] = [];
  if (verdict.warnings.length > 0) {
    for (const runId of new Set(decision.causes.map((c) => c.runId).filter((r) => r !== null))) {
      out.push(
        command(
          ["rollouts", "replay", item.name, "--analysis", runId],
          "decide its recorded measurements again",
        ),
      );
    }
  }
  if (previous && facts.servingUntil === "now") {
    out.push(
      command(
        ["rollouts", "undo", item.name],
        `if ${facts.image ?? "this revision"} is bad after all: back to revision ${previous.revision} (${previous.tag ?? previous.digest}) through the steps`,
      ),
    );
  }
  return out.length > 0
    ? out
    : [command(["rollouts", "get", item.name], "nothing to do: the rollout is Healthy")];
}
