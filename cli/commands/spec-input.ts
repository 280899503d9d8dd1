import { formatProblem, loadRollout, type RolloutSpec, SpecError } from "../../statemachine/index.ts";
import type { Io } from "../io.ts";
import { printProblems } from "../problem-lines.ts";
import { printable } from "../terminal.ts";

/**
 * Loads the one rollout the files describe, printing skipped documents as notes (warnings as
 * warnings) and every problem as one line (the first twenty, then their count); undefined means
 * the command should exit 2.
 */
export async function loadSpecOrReport(files: string[], io: Io): Promise<RolloutSpec | undefined> {
  try {
    const { spec, notes } = await loadRollout(files);
    // A note that is a warning says so itself (`warning: …`).
    for (const note of notes) io.err(printable(note.startsWith("warning: ") ? note : `note: ${note}`));
    return spec;
  } catch (error) {
    if (error instanceof SpecError) {
      printProblems(io, error.problems.map(formatProblem));
      return undefined;
    }
    throw error;
  }
}
