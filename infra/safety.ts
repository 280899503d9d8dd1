import { Annotations, ArnFormat, Stack, Token } from "aws-cdk-lib";
import * as cloudwatch from "aws-cdk-lib/aws-cloudwatch";
import * as events from "aws-cdk-lib/aws-events";
import type { Construct } from "constructs";
import {
  alarmArnParts,
  alarmNameOf,
  HOOK_POINTS,
  providersRead,
  type RolloutSpec,
  stepAnalysis,
} from "../statemachine/index.ts";
import type { RolloutOptions } from "./props.ts";

/**
 * Alarm rollback and lifecycle hooks on AWS: the rule that brings an alarm's state change to the
 * abort channel, the grants that let the functions read the alarms and start the hooks, and what
 * the construct can check before anything is deployed.
 */

const isAlarm = (a: unknown): a is cloudwatch.IAlarm =>
  typeof a === "object" && a !== null && "alarmArn" in a && "alarmName" in a;

/** An IAlarm's name: the literal name an alarm of this app was given, else its (token) name. */
function nameOf(alarm: cloudwatch.IAlarm): string {
  const cfn = alarm.node.defaultChild;
  if (cfn instanceof cloudwatch.CfnAlarm || cfn instanceof cloudwatch.CfnCompositeAlarm) {
    if (typeof cfn.alarmName === "string" && !Token.isUnresolved(cfn.alarmName)) return cfn.alarmName;
  }
  return alarm.alarmName;
}

/** The spec's alarms with the `alarms` prop's (IAlarms by their name), each once. */
export function mergedAlarms(spec: RolloutSpec, options: RolloutOptions): string[] {
  const refs = [...(spec.alarms ?? []), ...(options.alarms ?? []).map((a) => (isAlarm(a) ? nameOf(a) : a))];
  const seen = new Set<string>();
  return refs.filter((r) => {
    const name = Token.isUnresolved(r) ? r : alarmNameOf(r);
    if (seen.has(name)) return false;
    seen.add(name);
    return true;
  });
}

/**
 * Problems the construct can see in the alarms: an ARN of another account or region (its state
 * changes never reach this account's bus, and DescribeAlarms here cannot read it), and an alarm
 * given as an IAlarm of another stack's account or region.
 */
export function alarmProblems(scope: Construct, options: RolloutOptions, refs: readonly string[]): string[] {
  const stack = Stack.of(scope);
  const problems: string[] = [];
  const here = (region: string, account: string) =>
    (Token.isUnresolved(stack.region) || region === stack.region) &&
    (Token.isUnresolved(stack.account) || account === stack.account);
  for (const ref of refs) {
    if (Token.isUnresolved(ref)) continue;
    const parts = alarmArnParts(ref);
    if (parts && !here(parts.region, parts.account)) {
      problems.push(
        `alarms: "${ref}" is in ${parts.account}/${parts.region}, not in this stack's ${stack.account}/${stack.region}: its state changes never reach this rollout (create the alarm, or a composite alarm, in this account and region)`,
      );
    }
  }
  for (const alarm of options.alarms ?? []) {
    if (!isAlarm(alarm) || !(alarm instanceof cloudwatch.Alarm || alarm instanceof cloudwatch.CompositeAlarm))
      continue;
    const other = Stack.of(alarm);
    if (
      !Token.isUnresolved(other.region) &&
      !Token.isUnresolved(stack.region) &&
      other.region !== stack.region
    ) {
      problems.push(`alarms: alarm ${alarm.node.path} is in region ${other.region}, not ${stack.region}`);
    }
  }
  return problems;
}

/**
 * At synth time, after every construct of the app exists: a name the spec gives that names an
 * alarm of this app is checked to be one (so a typo in a name the app defines is an error), and a
 * name of no alarm in the app is a warning (it must exist already: the run-time check refuses a
 * missing alarm unless `ignorePollAlarmFailure`).
 */
export function validateAlarmNames(scope: Construct, names: readonly string[], ignore: boolean): void {
  scope.node.addValidation({
    validate: () => {
      const defined = new Set<string>();
      let any = false;
      for (const c of scope.node.root.node.findAll()) {
        if (c instanceof cloudwatch.CfnAlarm || c instanceof cloudwatch.CfnCompositeAlarm) {
          any = true;
          const name = Stack.of(c).resolve(c.alarmName);
          if (typeof name === "string") defined.add(name);
        }
      }
      const problems: string[] = [];
      for (const ref of names) {
        if (Token.isUnresolved(ref)) continue;
        const name = alarmNameOf(ref);
        if (defined.has(name)) continue;
        if (any && nearest(name, defined) !== undefined && !ignore) {
          problems.push(
            `alarms: no alarm named "${name}" in this app (did you mean "${nearest(name, defined)}"?); a rollout cannot be guarded by an alarm that does not exist`,
          );
        } else {
          Annotations.of(scope).addWarningV2(
            "sfn-rollouts:alarm-outside-app",
            `alarm "${name}" is not defined in this app: it must exist when the rollout runs (a missing alarm aborts the rollout${ignore ? ", unless ignorePollAlarmFailure" : ""})`,
          );
        }
      }
      return problems;
    },
  });
}

/** An app alarm's name within two edits of `name` (a likely typo), if there is one. */
function nearest(name: string, defined: ReadonlySet<string>): string | undefined {
  for (const d of defined) if (editDistance(name, d) <= 2) return d;
  return undefined;
}

function editDistance(a: string, b: string): number {
  const row = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    let prev = row[0] as number;
    row[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const tmp = row[j] as number;
      row[j] = Math.min(
        (row[j] as number) + 1,
        (row[j - 1] as number) + 1,
        prev + (a[i - 1] === b[j - 1] ? 0 : 1),
      );
      prev = tmp;
    }
  }
  return row[b.length] as number;
}

/** `CloudWatch Alarm State Change` to ALARM of one of the rollout's alarms. */
export function alarmRule(scope: Construct, rollout: string, names: readonly string[]): events.Rule {
  return new events.Rule(scope, "OnAlarm", {
    description: `Aborts rollout ${rollout} when one of its alarms goes to ALARM`,
    eventPattern: {
      source: ["aws.cloudwatch"],
      detailType: ["CloudWatch Alarm State Change"],
      detail: {
        alarmName: names.map((n) => (Token.isUnresolved(n) ? n : alarmNameOf(n))),
        state: { value: ["ALARM"] },
      },
    },
  });
}

/** The ARNs `cloudwatch:DescribeAlarms` is granted on: exactly the rollout's alarms. */
export function alarmArns(scope: Construct, names: readonly string[]): string[] {
  const stack = Stack.of(scope);
  return names.map((n) =>
    !Token.isUnresolved(n) && alarmArnParts(n)
      ? n
      : stack.formatArn({
          service: "cloudwatch",
          resource: "alarm",
          resourceName: Token.isUnresolved(n) ? n : alarmNameOf(n),
          arnFormat: ArnFormat.COLON_RESOURCE_NAME,
        }),
  );
}

/**
 * The ARNs of the functions the spec's analyses measure with (the `sfn-rollouts/lambda` plugin,
 * directly or as a judge's reader), a name made an ARN of this stack's account and region.
 */
export function metricFunctions(scope: Construct, spec: RolloutSpec): string[] {
  const analyses = [
    ...spec.steps.flatMap((s) => stepAnalysis(s) ?? []),
    ...(spec.backgroundAnalysis ? [spec.backgroundAnalysis.analysis] : []),
  ];
  const names = analyses.flatMap((a) =>
    a.templates.flatMap((t) =>
      t.metrics.flatMap((m) =>
        providersRead(m.provider).flatMap((p) => (p.lambda ? [p.lambda.function] : [])),
      ),
    ),
  );
  const stack = Stack.of(scope);
  return [...new Set(names)].map((n) =>
    n.startsWith("arn:")
      ? n
      : stack.formatArn({
          service: "lambda",
          resource: "function",
          resourceName: n,
          arnFormat: ArnFormat.COLON_RESOURCE_NAME,
        }),
  );
}

/** The function ARNs of the spec's hooks. */
export function hookFunctions(spec: RolloutSpec): string[] {
  return [...new Set(HOOK_POINTS.flatMap((p) => (spec.hooks?.[p] ? [spec.hooks[p].function] : [])))];
}
