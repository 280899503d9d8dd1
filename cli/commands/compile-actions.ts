import { targetSettingsProblems, targetSpecProblems } from "../../functions/traffic/settings.ts";
import { Exit, type Io, UsageError } from "../io.ts";
import { printable } from "../terminal.ts";
import { compileOrReport } from "./definition-check.ts";
import { loadSpecOrReport } from "./spec-input.ts";

export interface CompileOptions {
  target?: string;
  readinessChecks?: boolean;
}

/**
 * The action of `rollouts compile`, apart from its registration so that the compiler and the
 * target settings' checks load only when it runs. Resolves to the exit code.
 */
export async function compileAction(io: Io, files: string[], opts: CompileOptions): Promise<number> {
  const spec = await loadSpecOrReport(files, io);
  if (!spec) return Exit.badInput;
  let target: Record<string, unknown> | undefined;
  if (opts.target !== undefined) {
    try {
      target = JSON.parse(opts.target) as Record<string, unknown>;
    } catch (error) {
      throw new UsageError(`--target is not JSON: ${(error as Error).message}`);
    }
    if (target === null || typeof target !== "object" || Array.isArray(target)) {
      throw new UsageError("--target must be a JSON object");
    }
    // The same check the construct makes before it embeds a target in the Tasks.
    const problems = [...targetSettingsProblems(target), ...targetSpecProblems(target.type, spec)];
    if (problems.length > 0) {
      for (const problem of problems) io.err(printable(`rollouts: --target: ${problem}`));
      return Exit.badInput;
    }
  }
  const definition = compileOrReport(spec, files, io, target, opts.readinessChecks);
  if (!definition) return Exit.badInput;
  io.out(JSON.stringify(definition, null, 2));
  return Exit.ok;
}
