import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { App, SecretValue, Stack } from "aws-cdk-lib";
import { Annotations, Match, Template } from "aws-cdk-lib/assertions";
import * as ecr from "aws-cdk-lib/aws-ecr";
import { AwsSolutionsChecks } from "cdk-nag";
import { beforeAll, describe, expect, it } from "vitest";
import { PropsError, RolloutController } from "../../infra/index.ts";
import type { NotificationsProps } from "../../infra/notifications.ts";
import { targetInput } from "../../local/events/bus.ts";
import { escapedDetail } from "../../statemachine/notification-markup.ts";

type Json = Record<string, unknown>;

const testApp = () =>
  new App({ context: { "aws:cdk:bundling-stacks": [] }, builtinCloudFormationValidation: false });

function flat(v: unknown): string {
  if (typeof v === "string") return v;
  const o = v as Json;
  if (o["Fn::Join"]) {
    const [sep, parts] = o["Fn::Join"] as [string, unknown[]];
    return parts.map(flat).join(sep);
  }
  if (o.Ref) return `<${o.Ref as string}>`;
  if (o["Fn::GetAtt"]) return `<${(o["Fn::GetAtt"] as string[]).join(".")}>`;
  return JSON.stringify(v);
}

function specFile(text: string): string {
  const file = join(mkdtempSync(join(tmpdir(), "notify-")), "shop.yaml");
  writeFileSync(file, text);
  return file;
}

const SHOP = `
name: shop
image: shop:1
steps: [50, 100]
notifications:
  - {trigger: on-rollout-aborted, service: slack, recipients: ["#deploys", "#oncall"]}
  - {trigger: on-rollout-completed, service: teams}
  - {trigger: on-analysis-run-failed, service: hook}
  - {trigger: on-rollout-paused, service: mail}
`;

const SERVICES: NotificationsProps["services"] = {
  slack: {
    type: "slack",
    webhookUrl: SecretValue.secretsManager("rollouts/slack", { jsonField: "url" }),
  },
  teams: { type: "teams", webhookUrl: "https://example.webhook.office.com/webhookb2/abc" },
  hook: {
    type: "webhook",
    url: "https://hooks.example.com/rollouts",
    headers: {
      Authorization: SecretValue.secretsManager("rollouts/hook", { jsonField: "token" }),
      "X-Team": SecretValue.secretsManager("rollouts/hook", { jsonField: "team" }),
    },
  },
  mail: { type: "email", addresses: ["oncall@example.com"] },
};

function notifyStack(notifications: NotificationsProps, spec = SHOP) {
  const stack = new Stack(testApp(), "Notify", { env: { account: "123456789012", region: "eu-west-1" } });
  const controller = new RolloutController(stack, "Controller", { notifications });
  const rollout = controller.addRollout("Shop", {
    spec: { files: [specFile(spec)] },
    target: { type: "lambda-alias", functionName: "shop", alias: "live" },
    trigger: { repository: ecr.Repository.fromRepositoryName(stack, "Repo", "shop") },
  });
  return { stack, controller, rollout };
}

/** The rule of one lifecycle event, and its targets. */
function ruleOf(template: Template, detailType: string): { Targets: Json[]; EventPattern: Json } {
  const rules = Object.values(template.findResources("AWS::Events::Rule")).filter(
    (r) => (r.Properties.EventPattern as Json)["detail-type"]?.toString() === detailType,
  );
  expect(rules).toHaveLength(1);
  return rules[0]?.Properties as { Targets: Json[]; EventPattern: Json };
}

/**
 * What EventBridge sends the target for an event with these fields: the embedded runtime's own
 * input transformer (`targetInput`) on the synthesized target.
 */
function transform(target: Json, values: Record<string, unknown>): unknown {
  const t = target.InputTransformer as { InputPathsMap: Record<string, string>; InputTemplate: unknown };
  const event = {
    version: "0",
    id: "e",
    "detail-type": values["$.detail-type"],
    source: "sfn-rollouts",
    account: "1",
    time: "t",
    region: "eu-west-1",
    resources: [],
    detail: {} as Json,
  };
  for (const [path, value] of Object.entries(values)) {
    if (path.startsWith("$.detail.")) event.detail[path.slice("$.detail.".length)] = value;
    else if (path === "$.detail") Object.assign(event.detail, value);
  }
  // As every handler publishes it (lifecycleEvent): the text fields escaped for each chat format.
  event.detail.escaped = escapedDetail(event.detail as Parameters<typeof escapedDetail>[0]);
  const input = targetInput(
    {
      id: "t",
      arn: "a",
      inputTransformer: { inputPathsMap: t.InputPathsMap, inputTemplate: flat(t.InputTemplate) },
    },
    event as never,
    "rule",
  );
  return JSON.parse(input);
}

const ABORTED = {
  "$.detail.rollout": "shop",
  "$.detail.message": 'Metric "success-rate" assessed Failed',
  "$.detail-type": "RolloutAborted",
};

describe("notifications on AWS", () => {
  let stack: Stack;
  let template: Template;

  beforeAll(() => {
    ({ stack } = notifyStack({ services: SERVICES }));
    template = Template.fromStack(stack);
  });

  it("routes the rollout's own lifecycle event to Slack, one target per channel, with Slack's JSON", () => {
    const rule = ruleOf(template, "RolloutAborted");
    expect(rule.EventPattern).toEqual({
      source: ["sfn-rollouts"],
      "detail-type": ["RolloutAborted"],
      detail: { rollout: ["shop"] },
    });
    expect(rule.Targets).toHaveLength(2);
    const bodies = rule.Targets.map((t) => transform(t, ABORTED) as Json);
    expect(bodies.map((b) => b.channel)).toEqual(["#deploys", "#oncall"]);
    const text = 'Rollout shop has been aborted. Metric "success-rate" assessed Failed';
    expect(bodies[0]).toMatchObject({
      text,
      blocks: [
        { type: "section", text: { type: "mrkdwn", text, verbatim: true } },
        {
          type: "actions",
          elements: [
            {
              type: "button",
              url: expect.stringMatching(
                /^https:\/\/eu-west-1\.console\.aws\.amazon\.com\/states\/home\?region=eu-west-1#\/statemachines\/view\/<ControllerShopStateMachine[0-9A-F]+>$/,
              ),
            },
          ],
        },
      ],
    });
    expect(rule.Targets[0]).toMatchObject({
      DeadLetterConfig: {
        Arn: { "Fn::GetAtt": [expect.stringMatching(/^ControllerNotificationsDeadLetters/), "Arn"] },
      },
      RetryPolicy: { MaximumRetryAttempts: 185 },
    });
  });

  it("calls the Slack webhook by POST at the URL resolved from Secrets Manager at deploy time", () => {
    const destinations = Object.values(template.findResources("AWS::Events::ApiDestination")).map(
      (r) => r.Properties as Json,
    );
    expect(destinations.map((d) => flat(d.InvocationEndpoint)).sort()).toEqual([
      "https://example.webhook.office.com/webhookb2/abc",
      "https://hooks.example.com/rollouts",
      "{{resolve:secretsmanager:rollouts/slack:SecretString:url::}}",
    ]);
    for (const d of destinations)
      expect(d).toMatchObject({ HttpMethod: "POST", InvocationRateLimitPerSecond: 1 });
  });

  it("sends Teams an Adaptive Card and the webhook the event with its headers from Secrets Manager", () => {
    const teams = transform(ruleOf(template, "RolloutCompleted").Targets[0] as Json, {
      ...ABORTED,
      "$.detail.message": "Rollout completed",
    }) as Json;
    expect(teams).toMatchObject({
      type: "message",
      attachments: [
        {
          contentType: "application/vnd.microsoft.card.adaptive",
          content: {
            type: "AdaptiveCard",
            body: [{ text: "Rollout shop has been completed. Rollout completed" }],
          },
        },
      ],
    });
    const detail = { rollout: "shop", step: 1, message: "m" };
    const hook = transform(ruleOf(template, "AnalysisRunFailed").Targets[0] as Json, {
      "$.detail.rollout": "shop",
      "$.detail.message": "m",
      "$.detail-type": "AnalysisRunFailed",
      "$.detail": detail,
    }) as Json;
    expect(hook).toMatchObject({
      trigger: "on-analysis-run-failed",
      event: "AnalysisRunFailed",
      message: "Rollout shop's analysis run failed. m",
      rollout: "shop",
      detail,
    });
    const connections = Object.values(template.findResources("AWS::Events::Connection")).map(
      (r) => r.Properties as Json,
    );
    const hookConnection = connections.find((c) => JSON.stringify(c).includes("rollouts/hook")) as Json;
    expect(hookConnection.AuthParameters).toEqual({
      ApiKeyAuthParameters: {
        ApiKeyName: "Authorization",
        ApiKeyValue: "{{resolve:secretsmanager:rollouts/hook:SecretString:token::}}",
      },
      InvocationHttpParameters: {
        HeaderParameters: [
          {
            Key: "X-Team",
            Value: "{{resolve:secretsmanager:rollouts/hook:SecretString:team::}}",
            IsValueSecret: true,
          },
        ],
      },
    });
  });

  it("emails through an SNS topic with the message and the console link as text", () => {
    template.hasResourceProperties("AWS::SNS::Subscription", {
      Protocol: "email",
      Endpoint: "oncall@example.com",
    });
    const target = ruleOf(template, "RolloutPaused").Targets[0] as Json;
    expect(flat(target.Arn)).toMatch(/^<ControllerNotificationsMailTopic/);
    const text = transform(target, { ...ABORTED, "$.detail.message": "paused for a person" });
    expect(text).toMatch(
      /^Rollout shop has been paused\. paused for a person\n\nhttps:\/\/eu-west-1\.console/,
    );
  });

  it("lets EventBridge invoke each API destination and nothing else", () => {
    const policies = Object.values(template.findResources("AWS::IAM::Policy")).flatMap(
      (p) =>
        (p.Properties.PolicyDocument as { Statement: Array<{ Action: unknown; Resource: unknown }> })
          .Statement,
    );
    const invoke = policies.filter((s) => JSON.stringify(s.Action).includes("events:InvokeApiDestination"));
    expect(invoke.length).toBeGreaterThan(0);
    for (const s of invoke) {
      expect(s.Action).toBe("events:InvokeApiDestination");
      expect(flat(s.Resource)).toMatch(/^<ControllerNotifications\w+Destination[0-9A-F]+\.Arn>$/);
    }
  });

  it("alarms on failed executions that were not superseded, to the email service's topic", () => {
    const filters = Object.values(template.findResources("AWS::Logs::MetricFilter")).map(
      (r) => r.Properties as Json,
    );
    expect(filters).toHaveLength(1);
    expect(filters[0]).toMatchObject({
      FilterPattern: '{ ($.type = "ExecutionFailed") && ($.details.error != "ExecutionSuperseded") }',
      LogGroupName: { Ref: expect.stringMatching(/^ControllerShopLogs/) },
      MetricTransformations: [
        { MetricNamespace: "SfnRollouts", MetricName: "ExecutionsFailed-shop", MetricValue: "1" },
      ],
    });
    const alarms = Object.values(template.findResources("AWS::CloudWatch::Alarm"))
      .map((r) => r.Properties as Json)
      .filter((a) => a.MetricName === "ExecutionsFailed-shop");
    expect(alarms).toHaveLength(1);
    expect(alarms[0]).toMatchObject({ Namespace: "SfnRollouts", Statistic: "Sum", Threshold: 1 });
    expect(((alarms[0] as Json).AlarmActions as unknown[]).map(flat)).toEqual([
      expect.stringMatching(/^<ControllerNotificationsMailTopic/),
    ]);
    expect(((alarms[0] as Json).OKActions as unknown[]).map(flat)).toEqual(
      ((alarms[0] as Json).AlarmActions as unknown[]).map(flat),
    );
  });

  it("draws both weights over time and the judges' figures on the rollout's dashboard", () => {
    const body = flat(
      ((Object.values(template.findResources("AWS::CloudWatch::Dashboard"))[0] as Json).Properties as Json)
        .DashboardBody,
    );
    expect(body).toContain('"expression":"100 - FILL(w, REPEAT)"');
    for (const name of ["JudgePValue", "JudgeBayesFactor", "JudgeCandidateValue", "JudgeStableValue"]) {
      expect(body).toContain(
        `SEARCH('{SfnRollouts,Rollout,Metric} MetricName=\\"${name}\\" Rollout=\\"shop\\"', 'Average', 60)`,
      );
    }
  });

  it("passes cdk-nag AwsSolutions with zero unacknowledged findings", () => {
    const report = new AwsSolutionsChecks().validateScope(stack);
    expect(
      report.violations.map((v) => `${v.ruleName} ${v.violatingResources.map((r) => r.constructPath)}`),
    ).toEqual([]);
    expect(Annotations.fromStack(stack).findError("*", Match.anyValue())).toEqual([]);
    expect(
      Annotations.fromStack(stack)
        .findWarning("*", Match.anyValue())
        .map((w) => w.entry.data),
    ).toEqual([]);
  });
});

describe("notification props: every problem named", () => {
  it("refuses a template's unknown field, a plain http URL and a string header", () => {
    let error: unknown;
    try {
      notifyStack({
        services: {
          slack: { type: "slack", webhookUrl: "http://hooks.example.com/x" },
          hook: {
            type: "webhook",
            url: "https://x.example.com",
            headers: { Authorization: "token" as never },
          },
        },
        templates: { "on-rollout-aborted": "{{.rollout.namespace}} aborted" },
      });
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(PropsError);
    expect((error as PropsError).problems).toEqual([
      expect.stringMatching(
        /^notifications\.services\.slack\.webhookUrl: "http:\/\/hooks\.example\.com…" must be https/,
      ),
      "notifications.services.hook.headers.Authorization: give a SecretValue (from Secrets Manager), not a string",
      expect.stringMatching(
        /^notifications\.templates\.on-rollout-aborted: unknown field \{\{\.rollout\.namespace\}\}/,
      ),
    ]);
  });

  it("a custom trigger of the ConfigMap gets a rule on NotificationTriggered; an unknown one a synth warning and no rule", () => {
    const spec = `${SHOP}  - {trigger: on-purple, service: slack}
  - {trigger: on-nothing, service: slack}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: argo-rollouts-notification-configmap}
data:
  trigger.on-purple: |
    - send: [purple]
      when: rollout.status.currentPodHash == 'sha256:ab'
  template.purple: |
    message: Rollout {{.rollout.metadata.name}} has purple image
`;
    const { stack } = notifyStack({ services: SERVICES }, spec);
    const t = Template.fromStack(stack);
    const rule = ruleOf(t, "NotificationTriggered");
    expect(rule.EventPattern).toEqual({
      source: ["sfn-rollouts"],
      "detail-type": ["NotificationTriggered"],
      detail: { rollout: ["shop"], trigger: ["on-purple"], condition: [0] },
    });
    const sent = transform(rule.Targets[0] as Json, {
      "$.detail.rollout": "shop",
      "$.detail-type": "NotificationTriggered",
    }) as { text: string };
    expect(sent.text).toBe("Rollout shop has purple image");
    expect(
      Annotations.fromStack(stack)
        .findWarning("*", Match.stringLikeRegexp("on-nothing"))
        .map((w) => w.entry.data),
    ).toEqual([
      expect.stringContaining(
        'on-nothing.slack: trigger "on-nothing" is neither built in nor in the argo-rollouts-notification-configmap: the subscription is ignored',
      ),
    ]);
    expect(
      Object.keys(t.findResources("AWS::Events::Rule")).filter((id) => id.includes("OnNothing")),
    ).toEqual([]);
  });

  it("takes the ConfigMap as a controller prop too: its custom triggers for every rollout, Begin evaluating them", () => {
    const configMapFile = specFile(`apiVersion: v1
kind: ConfigMap
metadata: {name: argo-rollouts-notification-configmap}
data:
  trigger.on-purple: |
    - send: [purple]
      when: rollout.status.currentPodHash == 'sha256:ab'
  template.purple: |
    message: Rollout {{.rollout.metadata.name}} has purple image
`);
    const { stack, rollout } = notifyStack(
      { services: SERVICES, configMapFile },
      `${SHOP}  - {trigger: on-purple, service: slack}\n`,
    );
    const rule = ruleOf(Template.fromStack(stack), "NotificationTriggered");
    expect(rule.EventPattern).toMatchObject({ detail: { trigger: ["on-purple"], condition: [0] } });
    expect(rollout.spec.notificationCatalog?.triggers["on-purple"]).toHaveLength(1);
    expect(() =>
      notifyStack({ services: SERVICES, configMapFile: specFile("name: shop\nsteps: [100]\n") }),
    ).toThrow(/notifications\.configMapFile: .* holds no argo-rollouts-notification-configmap/);
  });

  it("refuses a spec subscribing to a service the controller does not have", () => {
    expect(() => notifyStack({ services: { mail: SERVICES.mail as never } })).toThrow(
      /spec\.notifications\[0\]\.service: no service "slack" in notifications\.services \(mail\)/,
    );
  });
});
