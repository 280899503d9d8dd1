import { z } from "zod";
import type { Origin } from "./analysis-resolve.ts";
import type { EscapedField } from "./notification-markup.ts";
import type { Problem } from "./problems.ts";

/**
 * Argo Notifications' nine built-in triggers, and the lifecycle event (EventBridge `detail-type`,
 * published by the handlers: functions/events/port.ts) each one fires on. A serverless rollout has
 * no ReplicaSet: `on-scaling-replica-set` fires when the candidate's traffic weight is set
 * (`TrafficWeightUpdated`, Argo's own event for a weight change), the nearest honest event.
 */
export const NOTIFICATION_TRIGGERS = {
  "on-rollout-completed": "RolloutCompleted",
  "on-rollout-step-completed": "RolloutStepCompleted",
  "on-rollout-updated": "RolloutUpdated",
  "on-rollout-aborted": "RolloutAborted",
  "on-rollout-paused": "RolloutPaused",
  "on-scaling-replica-set": "TrafficWeightUpdated",
  "on-analysis-run-running": "AnalysisRunRunning",
  "on-analysis-run-error": "AnalysisRunError",
  "on-analysis-run-failed": "AnalysisRunFailed",
} as const;
export type NotificationTrigger = keyof typeof NOTIFICATION_TRIGGERS;

/** Whether a trigger name is one of Argo's nine built-in triggers. */
export const isBuiltInTrigger = (name: string): name is NotificationTrigger =>
  Object.hasOwn(NOTIFICATION_TRIGGERS, name);

/**
 * The lifecycle event a custom trigger's subscribers receive: published by Begin for each custom
 * trigger whose `when` holds for the new revision (`detail.trigger` names it).
 */
export const CUSTOM_TRIGGER_EVENT = "NotificationTriggered";

/** A trigger's name: built-in, or a custom one of the notification ConfigMap (`on-purple`). */
const TRIGGER_NAME = /^[A-Za-z0-9][A-Za-z0-9_-]{0,127}$/;

/** A service name as the controller's `notifications.services` keys it (and Argo's annotation ends). */
const SERVICE_NAME = /^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$/;
/** An EventBridge rule has at most 5 targets; a Slack subscription has one target per channel. */
export const MAX_RECIPIENTS = 5;

/** One subscription: when `trigger` fires, `service` is told (for Slack, in each of `recipients`). */
export const NotificationSubscriptionSchema = z
  .object({
    /** A built-in trigger or one of the notification ConfigMap's; an unknown one is ignored, with a warning. */
    trigger: z
      .string()
      .regex(
        TRIGGER_NAME,
        "a trigger name is letters, digits, '-' and '_' (up to 128), like on-rollout-aborted",
      ),
    service: z
      .string()
      .regex(
        SERVICE_NAME,
        "a service name is letters, digits, '-' and '_' (up to 64), as the controller names it",
      ),
    /** Slack: the channels (`#deploys`); other services take their recipients from their own settings. */
    recipients: z.array(z.string().min(1).max(200)).max(MAX_RECIPIENTS).default([]),
  })
  .strict();
export type NotificationSubscription = z.infer<typeof NotificationSubscriptionSchema>;
export type NotificationSubscriptionInput = z.input<typeof NotificationSubscriptionSchema>;

/** Argo's annotation prefix: `notifications.argoproj.io/subscribe.<trigger>.<service>: <r1>;<r2>`. */
export const SUBSCRIBE_ANNOTATION = "notifications.argoproj.io/subscribe.";
const SUBSCRIPTIONS_ANNOTATION = "notifications.argoproj.io/subscriptions";

/**
 * The subscriptions of an Argo Rollout's annotations. A malformed key, an unknown trigger and
 * Argo's YAML `subscriptions` form (not read here) are problems, never silently dropped: a
 * subscription nobody receives is what notifications exist to prevent.
 */
export function subscriptionsFromAnnotations(
  annotations: Readonly<Record<string, string>> | undefined,
  origin: Origin,
  problems: Problem[],
): NotificationSubscription[] {
  const out: NotificationSubscription[] = [];
  for (const [key, value] of Object.entries(annotations ?? {})) {
    const path = `metadata.annotations[${JSON.stringify(key)}]`;
    if (key === SUBSCRIPTIONS_ANNOTATION) {
      problems.push({
        ...origin,
        path,
        message: `not supported: write one ${SUBSCRIBE_ANNOTATION}<trigger>.<service> annotation per subscription`,
      });
      continue;
    }
    if (!key.startsWith(SUBSCRIBE_ANNOTATION)) continue;
    const rest = key.slice(SUBSCRIBE_ANNOTATION.length);
    const dot = rest.indexOf(".");
    if (dot < 0) {
      problems.push({
        ...origin,
        path,
        message: `expected ${SUBSCRIBE_ANNOTATION}<trigger>.<service>, e.g. ${SUBSCRIBE_ANNOTATION}on-rollout-aborted.slack`,
      });
      continue;
    }
    const parsed = NotificationSubscriptionSchema.safeParse({
      trigger: rest.slice(0, dot),
      service: rest.slice(dot + 1),
      recipients: value
        .split(";")
        .map((r) => r.trim())
        .filter((r) => r.length > 0),
    });
    if (!parsed.success) {
      for (const issue of parsed.error.issues) problems.push({ ...origin, path, message: issue.message });
      continue;
    }
    out.push(parsed.data);
  }
  return out;
}

/**
 * The fields a notification template may name, and where each comes from: a JSONPath into the
 * lifecycle event as EventBridge delivers it, or a value the construct knows when it synthesizes
 * (`constant`). This is the whole set: a template naming anything else is refused, named.
 * `escaped` names the field's escaped copies in the event (`$.detail.escaped.<format>.<field>`),
 * which Slack and Teams templates read instead of the raw value; the other fields are numbers,
 * times or names AWS and this project give, which no one else writes.
 */
export const TEMPLATE_FIELDS = {
  ".rollout.name": { path: "$.detail.rollout", escaped: "rollout", doc: "the rollout's name" },
  ".rollout.metadata.name": {
    path: "$.detail.rollout",
    escaped: "rollout",
    doc: "the same, as Argo's templates write it",
  },
  ".rollout.revision": { path: "$.detail.revision", doc: "Argo's revision number (null before the first)" },
  ".rollout.image": {
    path: "$.detail.image",
    escaped: "image",
    doc: "the revision's image (null when unknown)",
  },
  ".rollout.digest": {
    path: "$.detail.digest",
    escaped: "digest",
    doc: "the revision's digest (null when unknown)",
  },
  ".message": {
    path: "$.detail.message",
    escaped: "message",
    doc: "what happened, as `rollouts get` says it",
  },
  ".step": { path: "$.detail.step", doc: "the zero-based step index (null when not tied to a step)" },
  ".time": { path: "$.detail.at", doc: "when it happened, ISO 8601 UTC" },
  ".id": {
    path: "$.detail.id",
    escaped: "id",
    doc: "the announcement's id (the same on a retried delivery)",
  },
  ".event": { path: "$.detail-type", doc: "the lifecycle event, e.g. RolloutAborted" },
  ".account": { path: "$.account", doc: "the AWS account" },
  ".region": { path: "$.region", doc: "the AWS region" },
  ".trigger": { constant: "trigger", doc: "the trigger, e.g. on-rollout-aborted" },
  ".consoleUrl": { constant: "consoleUrl", doc: "the rollout's state machine in the Step Functions console" },
  ".stateMachineArn": { constant: "stateMachineArn", doc: "the rollout's state machine" },
} as const satisfies Record<
  string,
  { path: string; escaped?: EscapedField; doc: string } | { constant: string; doc: string }
>;
export type TemplateField = keyof typeof TEMPLATE_FIELDS;

/** Argo's catalog messages, with the rollout's console page. */
export const DEFAULT_TEMPLATES: Readonly<Record<NotificationTrigger, string>> = {
  "on-rollout-completed": "Rollout {{.rollout.name}} has been completed. {{.message}}",
  "on-rollout-step-completed": "Rollout {{.rollout.name}}: {{.message}}",
  "on-rollout-updated": "Rollout {{.rollout.name}} has been updated. {{.message}}",
  "on-rollout-aborted": "Rollout {{.rollout.name}} has been aborted. {{.message}}",
  "on-rollout-paused": "Rollout {{.rollout.name}} has been paused. {{.message}}",
  "on-scaling-replica-set": "Scaling Rollout {{.rollout.name}}'s canary: {{.message}}",
  "on-analysis-run-running": "Rollout {{.rollout.name}}'s analysis run is running. {{.message}}",
  "on-analysis-run-error": "Rollout {{.rollout.name}}'s analysis run is in error state. {{.message}}",
  "on-analysis-run-failed": "Rollout {{.rollout.name}}'s analysis run failed. {{.message}}",
};

/** A parsed template: literal text and fields, in order. */
export type TemplatePart = { text: string } | { field: TemplateField };

/** A template is bounded: EventBridge's InputTemplate holds at most 8192 characters with its JSON. */
export const MAX_TEMPLATE = 2_000;

/**
 * Parses a template (`Rollout {{.rollout.name}} aborted: {{.message}}`): `{{ .field }}` names one of
 * {@link TEMPLATE_FIELDS}; anything else between braces (Go template actions such as `{{if}}`),
 * an unknown field, an unclosed `{{`, or text EventBridge would read as a placeholder (`<name>`)
 * is a problem naming it. Returns the parts, or the problems.
 */
export function parseTemplate(template: string): { parts: TemplatePart[] } | { problems: string[] } {
  const problems: string[] = [];
  if (template.length > MAX_TEMPLATE)
    problems.push(`${template.length} characters, more than ${MAX_TEMPLATE}`);
  const placeholder = /<[A-Za-z0-9_.-]+>/.exec(template);
  if (placeholder)
    problems.push(
      `${JSON.stringify(placeholder[0])} would be read by EventBridge as a placeholder: name fields as {{.field}}`,
    );
  const parts: TemplatePart[] = [];
  let at = 0;
  while (at < template.length) {
    const open = template.indexOf("{{", at);
    if (open < 0) {
      parts.push({ text: template.slice(at) });
      break;
    }
    if (open > at) parts.push({ text: template.slice(at, open) });
    const close = template.indexOf("}}", open + 2);
    if (close < 0) {
      problems.push(`"{{" at character ${open + 1} is not closed by "}}"`);
      break;
    }
    const inner = template.slice(open + 2, close).trim();
    if (Object.hasOwn(TEMPLATE_FIELDS, inner)) {
      parts.push({ field: inner as TemplateField });
    } else if (/^\.[A-Za-z0-9_.]+$/.test(inner)) {
      problems.push(`unknown field {{${inner}}}: the fields are ${Object.keys(TEMPLATE_FIELDS).join(", ")}`);
    } else {
      problems.push(`{{${inner}}} is not a field: a template names fields only, like {{.rollout.name}}`);
    }
    at = close + 2;
  }
  return problems.length > 0 ? { problems } : { parts: mergeText(parts) };
}

function mergeText(parts: TemplatePart[]): TemplatePart[] {
  const out: TemplatePart[] = [];
  for (const part of parts) {
    const last = out.at(-1);
    if ("text" in part && last && "text" in last) last.text += part.text;
    else if (!("text" in part) || part.text.length > 0) out.push(part);
  }
  return out;
}
