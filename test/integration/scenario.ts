import type { SFNClient } from "@aws-sdk/client-sfn";
import type { HandlerName } from "../../functions/config.ts";
import type { RolloutItem } from "../../functions/store/schema.ts";
import type { NotificationsProps } from "../../infra/notifications.ts";
import type { LambdaHandler } from "../../local/aws/lambda.ts";
import type { DemoApp } from "../../local/demo/app.ts";
import type { DemoJudge } from "../../local/demo/spec.ts";
import type { RunningProxy } from "../../local/proxy/server.ts";

export const DIGESTS = {
  v1: `sha256:${"1".repeat(64)}`,
  v2: `sha256:${"2".repeat(64)}`,
  v3: `sha256:${"3".repeat(64)}`,
  v4: `sha256:${"4".repeat(64)}`,
};

export type Tag = keyof typeof DIGESTS;

/**
 * The versions every backend runs, with the share of `/checkout` requests each fails: v1 and v2
 * fail 1% (healthy: the same as each other), v3 fails half (a threshold catches it), v4 fails 3%
 * (only a judge against the stable version does).
 */
export const ERROR_RATES: Record<Tag, number> = { v1: 0.01, v2: 0.01, v3: 0.5, v4: 0.03 };

/** What a scenario needs of the deployed rollout, whatever runs it (embedded runtime or LocalStack). */
export interface ScenarioOptions {
  /** `pause` of step 4: `{duration: 2s}` by default, `{}` to wait for a person. */
  pause?: string;
  /** Point the analysis at a port nothing listens on: every measurement is an Error. */
  providerDown?: boolean;
  /** Measurements per analysis (`count`); 2 by default. */
  count?: number;
  /** A background analysis of the success rate from step 1, with these conditions. */
  background?: { successCondition: string; failureCondition: string };
  /** The `errors-vs-stable` judge at the 50% step. */
  judge?: DemoJudge;
  /** Point only the judge at a port nothing listens on: its readings fail, the threshold still reads. */
  judgeDown?: boolean;
  /**
   * Pad every answer the analysis reads with this many bytes (`result` becomes `[rate, "xxx…"]`):
   * a provider whose answers are far larger than a DynamoDB item (the embedded runtime only).
   */
  answerPadding?: number;
  /** Wraps each handler in-process (the embedded runtime only). */
  wrap?: (name: HandlerName, handler: LambdaHandler) => LambdaHandler;
  /** The controller's notifications (the embedded runtime only). */
  notifications?: NotificationsProps;
  /** The Rollout's annotations (`rollouts.sfn/alarms`, the hooks). */
  annotations?: Record<string, string>;
  /** More spec files after the demo's (a notification ConfigMap; the embedded runtime only). */
  extraSpecFiles?: string[];
  /** Local functions the hooks name, by function name (the embedded runtime only). */
  hookFunctions?: Record<string, LambdaHandler>;
}

/** One rollout with three demo services behind its own proxy. */
export interface Scenario {
  /** The rollout's name (`demo` on the embedded runtime; `demo-N` where rollouts share a table). */
  name: string;
  proxy: RunningProxy;
  apps: Record<Tag, DemoApp>;
  sfn: SFNClient;
  stateMachineArn: string;
  /** Pushes a tag (v1, v2, v3) as ECR does. */
  push(tag: Tag, at?: Date): Promise<void>;
  /** Lets the rollout run with live traffic until `done(item)` (or `maxSeconds` of rollout time). */
  drive(
    done: (item: RolloutItem | undefined) => boolean,
    options?: { rps?: number; maxSeconds?: number },
  ): Promise<RolloutItem | undefined>;
  /** Lets time pass with no traffic (virtual time jumps; real time waits a few seconds at most). */
  idle(ms: number): Promise<void>;
  item(): Promise<RolloutItem | undefined>;
  /** Runs the `rollouts` CLI in-process, configured only by environment variables. */
  cli(...argv: string[]): Promise<{ code: number; out: string; err: string }>;
  executions(): Promise<Array<{ name: string; status: string; error?: string }>>;
  /** The lifecycle events the rollout published (the embedded runtime's bus), oldest first. */
  lifecycle?(): Array<{ type: string; detail: Record<string, unknown> }>;
  close(): Promise<void>;
}

export const at =
  (tag: string, phases: RolloutItem["phase"][]) =>
  (item: RolloutItem | undefined): boolean =>
    item?.currentRevision?.tag === tag && phases.includes(item.phase);
export const done = (tag: string) => at(tag, ["Healthy", "Degraded"]);
