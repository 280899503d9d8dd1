import { randomBytes } from "node:crypto";
import { RolloutsError } from "../../statemachine/errors.ts";
import { TaskFailure } from "./errors.ts";

/** Why a token was refused: the names of the Step Functions errors the façade answers with. */
export type TokenRefusal = "InvalidToken" | "TaskDoesNotExist" | "TaskTimedOut";

/** A `SendTask*` call that Step Functions would refuse. */
export class TokenError extends RolloutsError {
  override readonly name: TokenRefusal;

  constructor(name: TokenRefusal, message: string) {
    super(message);
    this.name = name;
  }
}

type Outcome = { ok: true; output: unknown } | { ok: false; failure: TaskFailure };

interface Waiting {
  executionArn: string;
  state: "waiting" | "done" | "timed-out";
  lastHeartbeat: number;
  settle: (outcome: Outcome) => void;
  outcome: Promise<Outcome>;
  onHeartbeat: (() => void) | undefined;
}

const PREFIX = "LOCALTOKEN";

/**
 * The task tokens of `.waitForTaskToken` states. A token is issued when the state's Parameters
 * read `$$.Task.Token` and opened as soon as the Task starts, before the function is invoked, so a
 * function may complete its own token while it is still running (as on AWS). Outcomes are kept per
 * token; a used or timed-out token is refused with the error Step Functions gives.
 */
export class TaskTokenRegistry {
  readonly #tokens = new Map<string, Waiting>();
  readonly #now: () => number;

  constructor(now: () => number) {
    this.#now = now;
  }

  /** A fresh opaque token for an execution. */
  issue(executionArn: string): string {
    const token = `${PREFIX}${randomBytes(24).toString("base64url")}`;
    let settle!: (outcome: Outcome) => void;
    const outcome = new Promise<Outcome>((resolve) => {
      settle = resolve;
    });
    this.#tokens.set(token, {
      executionArn,
      state: "waiting",
      lastHeartbeat: this.#now(),
      settle,
      outcome,
      onHeartbeat: undefined,
    });
    return token;
  }

  /** The outcome of a token: the output of `SendTaskSuccess` or the failure of `SendTaskFailure`. */
  async outcome(token: string): Promise<unknown> {
    const waiting = this.#get(token);
    const outcome = await waiting.outcome;
    if (outcome.ok) return outcome.output;
    throw outcome.failure;
  }

  /** When the last heartbeat (or the start) was, for the heartbeat timeout. */
  lastHeartbeat(token: string): number {
    return this.#get(token).lastHeartbeat;
  }

  /** Subscribes to heartbeats (the engine re-arms its heartbeat timer). */
  onHeartbeat(token: string, listener: () => void): void {
    this.#get(token).onHeartbeat = listener;
  }

  succeed(token: string, output: unknown): void {
    this.#settle(token, { ok: true, output });
  }

  fail(token: string, error: string, cause: string): void {
    this.#settle(token, { ok: false, failure: new TaskFailure(error, cause) });
  }

  heartbeat(token: string): void {
    const waiting = this.#open(token);
    waiting.lastHeartbeat = this.#now();
    waiting.onHeartbeat?.();
  }

  /** Ends a wait from the engine's side: `timed-out` refuses later calls with `TaskTimedOut`. */
  close(token: string, how: "done" | "timed-out", failure?: TaskFailure): void {
    const waiting = this.#tokens.get(token);
    if (waiting === undefined || waiting.state !== "waiting") return;
    waiting.state = how;
    if (failure !== undefined) waiting.settle({ ok: false, failure });
  }

  /** Tokens still waited on (for error messages of a stuck virtual-time run). */
  open(executionArn?: string): string[] {
    return [...this.#tokens.entries()]
      .filter(
        ([, w]) => w.state === "waiting" && (executionArn === undefined || w.executionArn === executionArn),
      )
      .map(([token]) => token);
  }

  #settle(token: string, outcome: Outcome): void {
    const waiting = this.#open(token);
    waiting.state = "done";
    waiting.settle(outcome);
  }

  #open(token: string): Waiting {
    const waiting = this.#get(token);
    if (waiting.state === "timed-out")
      throw new TokenError("TaskTimedOut", "Task Timed Out: the wait has timed out");
    if (waiting.state === "done") {
      throw new TokenError("TaskDoesNotExist", "Task Does Not Exist: the task was already completed");
    }
    return waiting;
  }

  #get(token: string): Waiting {
    if (!token.startsWith(PREFIX)) throw new TokenError("InvalidToken", "Invalid Token: not a task token");
    const waiting = this.#tokens.get(token);
    if (waiting === undefined) throw new TokenError("TaskDoesNotExist", "Task Does Not Exist");
    return waiting;
  }
}
