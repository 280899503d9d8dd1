import { readinessChecksFor } from "../../functions/traffic/settings.ts";
import {
  compile,
  formatProblem,
  type RolloutSpec,
  SpecError,
  type StateMachineDefinition,
} from "../../statemachine/index.ts";
import type { Io } from "../io.ts";
import { printProblems } from "../problem-lines.ts";

/**
 * The definition `rollouts compile` prints, or undefined once what Step Functions would refuse
 * (its size, its timeouts) is printed, said of the files given: the one check `compile` and
 * `plan` make, so `plan` refuses what `compile` refuses, in the same words.
 */
export function compileOrReport(
  spec: RolloutSpec,
  files: readonly string[],
  io: Io,
  target?: Record<string, unknown>,
  readinessChecks?: boolean,
): StateMachineDefinition | undefined {
  try {
    return compile(spec, {
      ...(target ? { target } : {}),
      // By default as the construct compiles it for this target (an ECS deployment, pods, a
      // SageMaker endpoint settle after each weight); the flag decides either way.
      readinessChecks: readinessChecks ?? readinessChecksFor(target?.type),
    });
  } catch (error) {
    if (!(error instanceof SpecError)) throw error;
    printProblems(
      io,
      error.problems.map((p) =>
        formatProblem({ ...p, file: files.join(", "), object: `Rollout ${spec.name}` }),
      ),
    );
    return undefined;
  }
}
