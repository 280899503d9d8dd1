import type { SFNClient } from "@aws-sdk/client-sfn";
import type { HandlerName } from "../../functions/config.ts";
import type { RolloutItem } from "../../functions/store/schema.ts";
import type { LambdaHandler } from "../../local/aws/lambda.ts";
import type { DemoApp } from "../../local/demo/app.ts";
import type { RunningProxy } from "../../local/proxy/server.ts";

export const DIGESTS = {
  v1: `sha256:${"1".repeat(64)}`,
  v2: `sha256:${"2".repeat(64)}`,
  v3: `sha256:${"3".repeat(64)}`,
};

/** What a scenario needs of the deployed rollout, whatever runs it (embedded runtime or LocalStack). */
export interface ScenarioOptions {
  /** `pause` of step 4: `{duration: 2s}` by default, `{}` to wait for a person. */
  pause?: string;
  /** Point the analysis at a port nothing listens on: every measurement is an Error. */
  providerDown?: boolean;
  /** Measurements per analysis (`count`); 2 by default. */
  count?: number;
  /** Wraps each handler in-process (the embedded runtime only). */
  wrap?: (name: HandlerName, handler: LambdaHandler) => LambdaHandler;
}

/** One rollout with three demo services behind its own proxy. */
export interface Scenario {
  /** The rollout's name (`demo` on the embedded runtime; `demo-N` where rollouts share a table). */
  name: string;
  proxy: RunningProxy;
  apps: Record<"v1" | "v2" | "v3", DemoApp>;
  sfn: SFNClient;
  stateMachineArn: string;
  /** Pushes a tag (v1, v2, v3) as ECR does. */
  push(tag: "v1" | "v2" | "v3", at?: Date): Promise<void>;
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
  close(): Promise<void>;
}

export const at =
  (tag: string, phases: RolloutItem["phase"][]) =>
  (item: RolloutItem | undefined): boolean =>
    item?.currentRevision?.tag === tag && phases.includes(item.phase);
export const done = (tag: string) => at(tag, ["Healthy", "Degraded"]);
