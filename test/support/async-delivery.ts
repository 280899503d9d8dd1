import { TIMER_DELIVERY } from "../../functions/config.ts";
import type { InProcessTimer } from "../../functions/timer/in-process.ts";
import type { TimerFiring } from "../../functions/timer/port.ts";
import type { LocalLambda } from "../../local/aws/lambda.ts";

/**
 * How a Timer firing reaches the resume function on AWS, for the embedded runtime: Scheduler and
 * the ticker invoke it asynchronously, so Lambda tries a failed event twice more, 1 and 2 minutes
 * later, and then sends Lambda's invocation record to the function's on-failure destination, the
 * redelivery queue (infra/dead-letters.ts). Its SQS event source hands the record to resume at
 * once, and again one visibility timeout after each receive that failed (the function threw, or
 * reported the message in `batchItemFailures`), `TIMER_DELIVERY.redeliveryReceives` receives in
 * all; then SQS moves it to the dead-letter queue and the firing is lost. Each stage is an entry
 * on the runtime's timer, keyed under `async-delivery/`.
 */

const PREFIX = "async-delivery/";

/** A failed attempt: which stage, and the error resume's invocation ended with. */
export interface FailedAttempt {
  firing: TimerFiring;
  /** `async 0`, `async 1`, `async 2` (Lambda's asynchronous attempts), `receive 1`…`receive 3`. */
  stage: string;
  error: string;
}

interface Stage {
  firing: TimerFiring;
  /** 1 and 2: Lambda's asynchronous retries; 3 and up: the redelivery queue's receives. */
  attempt: number;
  lastError: { errorType: string; errorMessage: string };
}

const ASYNC_ATTEMPTS = TIMER_DELIVERY.asyncRetryAttempts + 1;

export class AsyncDelivery {
  /** Every failed attempt, in order. */
  readonly failures: FailedAttempt[] = [];
  /** Firings taken from the redelivery queue, and firings that went on to the dead-letter queue. */
  readonly redelivered: TimerFiring[] = [];
  readonly lost: TimerFiring[] = [];

  constructor(
    readonly options: {
      lambda: () => LocalLambda;
      timer: () => InProcessTimer;
      now: () => number;
      /** resume's ARN in the runtime's Lambda service. */
      functionArn: string;
    },
  ) {}

  /** Delivers a firing of the Timer, or the next stage of one that failed. */
  async deliver(firing: TimerFiring): Promise<void> {
    if (!firing.key.startsWith(PREFIX)) return this.#attempt({ firing, attempt: 0, lastError: none });
    return this.#attempt(firing.payload as Stage);
  }

  async #attempt(stage: Stage): Promise<void> {
    const { firing, attempt } = stage;
    const receive = attempt - ASYNC_ATTEMPTS + 1;
    let error: { errorType: string; errorMessage: string } | undefined;
    if (receive < 1) {
      const outcome = await this.options.lambda().invoke(this.options.functionArn, firing);
      if (!outcome.ok) error = outcome.error;
    } else {
      if (receive === 1) this.redelivered.push(firing);
      const messageId = `${firing.key}#redelivery`;
      const outcome = await this.options.lambda().invoke(this.options.functionArn, {
        Records: [
          {
            messageId,
            receiptHandle: `${messageId}#${receive}`,
            body: JSON.stringify(this.#invocationRecord(firing, stage.lastError)),
            attributes: { ApproximateReceiveCount: String(receive) },
            messageAttributes: {},
            eventSource: "aws:sqs",
            eventSourceARN: "arn:aws:sqs:us-east-1:000000000000:timer-redelivery",
            awsRegion: "us-east-1",
          },
        ],
      });
      if (!outcome.ok) error = outcome.error;
      else {
        const failed = (outcome.payload as { batchItemFailures?: Array<{ itemIdentifier: string }> })
          .batchItemFailures;
        if (failed?.some((f) => f.itemIdentifier === messageId))
          error = { errorType: "BatchItemFailure", errorMessage: "resume reported the message failed" };
      }
    }
    if (error === undefined) return;
    this.failures.push({
      firing,
      stage: receive < 1 ? `async ${attempt}` : `receive ${receive}`,
      error: `${error.errorType}: ${error.errorMessage}`,
    });
    if (receive >= TIMER_DELIVERY.redeliveryReceives) {
      this.lost.push(firing);
      return;
    }
    // Lambda's retries come 1 then 2 minutes later; the queue hands the record over at once,
    // then after each visibility timeout.
    const delay =
      attempt + 1 < ASYNC_ATTEMPTS
        ? (attempt + 1) * 60_000
        : attempt + 1 === ASYNC_ATTEMPTS
          ? 1_000
          : TIMER_DELIVERY.redeliveryVisibilitySeconds * 1000;
    const next: Stage = { firing, attempt: attempt + 1, lastError: error };
    await this.options.timer().schedule({
      key: `${PREFIX}${attempt + 1}/${firing.key}`,
      at: this.options.now() + delay,
      payload: next,
    });
  }

  /** Lambda's record of an event that failed every asynchronous attempt, as its destination receives it. */
  #invocationRecord(firing: TimerFiring, error: { errorType: string; errorMessage: string }) {
    return {
      version: "1.0",
      timestamp: new Date(this.options.now()).toISOString(),
      requestContext: {
        requestId: firing.key,
        functionArn: `${this.options.functionArn}:$LATEST`,
        condition: "RetriesExhausted",
        approximateInvokeCount: ASYNC_ATTEMPTS,
      },
      requestPayload: firing,
      responseContext: { statusCode: 200, executedVersion: "$LATEST", functionError: "Unhandled" },
      responsePayload: { errorType: error.errorType, errorMessage: error.errorMessage },
    };
  }
}

const none = { errorType: "", errorMessage: "" };
