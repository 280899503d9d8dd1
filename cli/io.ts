import type { Command } from "commander";

/** Where a command writes; tests pass a recorder, the binary passes the process streams. */
export interface Io {
  out(text: string): void;
  err(text: string): void;
}

export const processIo: Io = {
  out: (text) => process.stdout.write(text.endsWith("\n") ? text : `${text}\n`),
  err: (text) => process.stderr.write(text.endsWith("\n") ? text : `${text}\n`),
};

/**
 * Exit codes shared by every command: 0 success, 1 a negative outcome (rollback, Failed),
 * 2 input the command cannot use, 3 a hold / pause / Inconclusive outcome.
 */
export const Exit = { ok: 0, negative: 1, badInput: 2, hold: 3 } as const;

/** A command adds itself to the program; its action resolves to the exit code. */
export type RegisterCommand = (program: Command, io: Io, done: (code: number) => void) => void;

/** Thrown by a command for input it cannot use: printed without a stack, exit 2. */
export class UsageError extends Error {
  override readonly name = "UsageError";
}
