import { TargetNotReadyError } from "../errors.ts";
import type { Clock, Readiness, TargetState } from "../port.ts";
import type { SageMakerSettings } from "../settings.ts";

/**
 * Waiting for the endpoint: an update takes minutes, so nothing blocks. Each wait has a deadline
 * (`progressDeadlineSeconds` from its start, recorded in the state), and until then a poll that
 * finds the endpoint still busy asks the workflow to come back in `pollSeconds`.
 */
export class EndpointWaits {
  constructor(
    private readonly endpointName: string,
    private readonly settings: Pick<SageMakerSettings, "progressDeadlineSeconds" | "pollSeconds">,
    private readonly clock: Clock,
  ) {}

  /** When a wait starting now fails: `seconds` from now, the settings' progress deadline by default. */
  deadline(seconds: number = this.settings.progressDeadlineSeconds): number {
    return this.clock.now() + seconds * 1000;
  }

  /** Not ready yet: poll again in `pollSeconds`, or fail once `deadlineAt` has passed. */
  notYet(state: TargetState, deadlineAt: number, progress: string): Readiness {
    if (this.clock.now() >= deadlineAt) {
      throw new TargetNotReadyError(
        `endpoint ${this.endpointName} was not ready before its progress deadline ` +
          `(${new Date(deadlineAt).toISOString()}): ${progress}`,
      );
    }
    return {
      ready: false,
      state,
      retryAfterSeconds: this.settings.pollSeconds,
      message: `endpoint ${this.endpointName}: ${progress}`,
    };
  }
}
