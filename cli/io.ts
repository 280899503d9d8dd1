import type { Command } from "commander";
import { RolloutsError } from "../statemachine/errors.ts";

/** Where a command writes; tests pass a recorder, the binary passes the process streams. */
export interface Io {
  out(text: string): void;
  err(text: string): void;
}

export const processIo: Io = {
  out: (text) => process.stdout.write(text.endsWith("\n") ? text : `${text}\n`),
  err: (text) => process.stderr.write(text.endsWith("\n") ? text : `${text}\n`),
};

/** The exit codes of every command: the one table, `exit-codes.ts`. */
export { Exit } from "./exit-codes.ts";

/** A command adds itself to the program; its action resolves to the exit code. */
export type RegisterCommand = (program: Command, io: Io, done: (code: number) => void) => void;

/** Thrown by a command for input it cannot use: printed without a stack, exit 2. */
export class UsageError extends RolloutsError {
  override readonly name = "UsageError";
}
