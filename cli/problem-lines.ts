import type { Io } from "./io.ts";
import { printable } from "./terminal.ts";

/**
 * Problems a command prints before it counts the rest: a file can hold thousands (a step or a
 * template repeated), and a screen of them says no more than the first few.
 */
export const PROBLEMS_SHOWN = 20;

/** Prints the first {@link PROBLEMS_SHOWN} problem lines on stderr, then how many more there are. */
export function printProblems(io: Io, lines: readonly string[]): void {
  for (const line of lines.slice(0, PROBLEMS_SHOWN)) io.err(printable(line));
  const more = lines.length - PROBLEMS_SHOWN;
  if (more > 0) io.err(`… and ${more.toLocaleString("en-US")} more problem${more > 1 ? "s" : ""}`);
}
