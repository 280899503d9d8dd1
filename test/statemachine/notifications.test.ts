import { describe, expect, it } from "vitest";
import { LifecycleEventTypeSchema } from "../../functions/events/port.ts";
import { parseRollout, parseSources, SpecError } from "../../statemachine/index.ts";
import { DEFAULT_TEMPLATES, NOTIFICATION_TRIGGERS, parseTemplate } from "../../statemachine/notifications.ts";

const argo = (annotations: string) => `
apiVersion: argoproj.io/v1alpha1
kind: Rollout
metadata:
  name: demo
  annotations:
${annotations}
spec:
  replicas: 2
  selector: {matchLabels: {app: demo}}
  template: {spec: {containers: [{name: app, image: demo:1}]}}
  strategy: {canary: {steps: [{setWeight: 50}]}}
`;

const native = (notifications: string) => `
apiVersion: sfn-rollouts/v1
name: shop
image: shop:1
steps: [50, 100]
notifications:
${notifications}
`;

function problems(text: string): string[] {
  try {
    parseSources([{ file: "r.yaml", text }]);
  } catch (error) {
    if (error instanceof SpecError) return error.problems.map((p) => `${p.path}: ${p.message}`);
    throw error;
  }
  throw new Error("expected a SpecError");
}

describe("notification subscriptions in the spec", () => {
  it("reads Argo's subscribe annotations, recipients split on ';'", () => {
    const { spec } = parseRollout([
      {
        file: "r.yaml",
        text: argo(`    notifications.argoproj.io/subscribe.on-rollout-aborted.slack: "#deploys; #oncall"
    notifications.argoproj.io/subscribe.on-rollout-completed.oncall-mail: ""
    unrelated/annotation: kept-out`),
      },
    ]);
    expect(spec.notifications).toEqual([
      { trigger: "on-rollout-aborted", service: "slack", recipients: ["#deploys", "#oncall"] },
      { trigger: "on-rollout-completed", service: "oncall-mail", recipients: [] },
    ]);
  });

  it("names a key without a service and Argo's YAML form; an unknown trigger is a warning, not a problem", () => {
    expect(
      problems(
        argo(`    notifications.argoproj.io/subscribe.on-rollout-exploded.slack: x
    notifications.argoproj.io/subscribe.on-rollout-aborted: x
    notifications.argoproj.io/subscriptions: "- trigger: [on-rollout-aborted]"`),
      ),
    ).toEqual([
      expect.stringMatching(/subscribe\.on-rollout-aborted"\]: expected .*<trigger>\.<service>/),
      expect.stringMatching(/subscriptions"\]: not supported/),
    ]);
    const { spec, notes } = parseRollout([
      { file: "r.yaml", text: argo("    notifications.argoproj.io/subscribe.on-rollout-exploded.slack: x") },
    ]);
    expect(spec.notifications).toEqual([
      { trigger: "on-rollout-exploded", service: "slack", recipients: ["x"] },
    ]);
    expect(notes).toEqual([
      'warning: rollout demo: subscription on-rollout-exploded.slack is ignored: trigger "on-rollout-exploded" is neither built in nor defined in the argo-rollouts-notification-configmap',
    ]);
  });

  it("reads the native field and names a bad entry by its path", () => {
    const { spec } = parseRollout([
      { file: "n.yaml", text: native(`  - {trigger: on-analysis-run-failed, service: teams}`) },
    ]);
    expect(spec.notifications).toEqual([
      { trigger: "on-analysis-run-failed", service: "teams", recipients: [] },
    ]);
    expect(problems(native(`  - {trigger: on-rollout-aborted, service: "sl ack"}`))).toEqual([
      expect.stringMatching(/^notifications\[0\]\.service: a service name is letters/),
    ]);
    expect(problems(native(`  - {trigger: on-rollout-aborted, service: slack, channel: x}`))).toEqual([
      'notifications[0]: unknown field "channel"',
    ]);
  });
});

describe("notification templates", () => {
  it("splits text and fields, with or without spaces inside the braces", () => {
    expect(parseTemplate("Rollout {{ .rollout.name }} aborted: {{.message}}")).toEqual({
      parts: [
        { text: "Rollout " },
        { field: ".rollout.name" },
        { text: " aborted: " },
        { field: ".message" },
      ],
    });
  });

  it("names an unknown field, a Go action, an unclosed brace and an EventBridge placeholder", () => {
    const result = parseTemplate("{{.rollout.namespace}} {{if .x}} <rollout> {{.message");
    expect(result).toEqual({
      problems: [
        expect.stringContaining('"<rollout>" would be read by EventBridge as a placeholder'),
        expect.stringMatching(
          /^unknown field \{\{\.rollout\.namespace\}\}: the fields are \.rollout\.name, /,
        ),
        "{{if .x}} is not a field: a template names fields only, like {{.rollout.name}}",
        expect.stringContaining('"{{" at character'),
      ],
    });
  });

  it("has a default per trigger, each a valid template, each trigger a lifecycle event", () => {
    for (const [trigger, event] of Object.entries(NOTIFICATION_TRIGGERS)) {
      expect(LifecycleEventTypeSchema.options).toContain(event);
      expect(parseTemplate(DEFAULT_TEMPLATES[trigger as keyof typeof DEFAULT_TEMPLATES])).toHaveProperty(
        "parts",
      );
    }
  });
});
