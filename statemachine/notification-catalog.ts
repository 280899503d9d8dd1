import { parse as parseYaml } from "yaml";
import { z } from "zod";
import type { Origin } from "./analysis-resolve.ts";
import { compile, ExprError, envOf, fromJSONValue, natureOfValue } from "./expr/index.ts";
import { MAX_ALIAS_COUNT } from "./limits.ts";
import { isBuiltInTrigger, parseTemplate } from "./notifications.ts";
import type { Problem } from "./problems.ts";

/** The ConfigMap Argo Rollouts reads its notification triggers and templates from. */
export const NOTIFICATION_CONFIGMAP = "argo-rollouts-notification-configmap";

/** One condition of a trigger (`trigger.<name>` in the ConfigMap): the templates it sends, and when. */
export const TriggerConditionSchema = z.object({
  /** The templates (`template.<name>`) that make the message. */
  send: z.array(z.string().min(1)).min(1),
  /** An expr predicate over `rollout` (the rollout object as Argo exposes it); none: always. */
  when: z.string().min(1).optional(),
});
export type TriggerCondition = z.infer<typeof TriggerConditionSchema>;

/** The triggers and templates of a notification ConfigMap, as the spec carries them. */
export const NotificationCatalogSchema = z.object({
  /** Each trigger's conditions (`trigger.<name>`), custom or redefining a built-in one. */
  triggers: z.record(z.string(), z.array(TriggerConditionSchema)),
  /** Each template's `message` (the part every service sends). */
  templates: z.record(z.string(), z.object({ message: z.string() })),
});
export type NotificationCatalog = z.infer<typeof NotificationCatalogSchema>;

/** Two catalogs as one, `over`'s keys winning (as a kustomize patch over Argo's catalog). */
export function mergeCatalogs(
  base: NotificationCatalog | undefined,
  over: NotificationCatalog | undefined,
): NotificationCatalog | undefined {
  if (!base || !over) return over ?? base;
  return {
    triggers: { ...base.triggers, ...over.triggers },
    templates: { ...base.templates, ...over.templates },
  };
}

/** Whether a Kubernetes object is Argo's notification ConfigMap. */
export function isNotificationConfigMap(object: {
  apiVersion?: unknown;
  kind?: unknown;
  metadata?: { name?: unknown };
}): boolean {
  return (
    object.apiVersion === "v1" &&
    object.kind === "ConfigMap" &&
    object.metadata?.name === NOTIFICATION_CONFIGMAP
  );
}

/**
 * The environment a `when` condition is checked against: `rollout`, a decoded JSON object
 * (`map[string]interface {}`), as Argo's controller hands the rollout to expr.
 */
export const WHEN_ENV = envOf({ rollout: natureOfValue(fromJSONValue({})) });

/** Checks a `when` condition with the project's expr; the error as expr words it, or undefined. */
export function whenProblem(when: string): string | undefined {
  try {
    compile(when, WHEN_ENV);
    return undefined;
  } catch (e) {
    if (e instanceof ExprError) return e.message;
    throw e;
  }
}

/**
 * Reads the ConfigMap's `data`: `trigger.<name>` (a YAML list of `{send, when}`) and
 * `template.<name>` (YAML with a `message`). A malformed entry, a `when` expr refuses or a message
 * that names a field the project cannot fill is a problem at its key; what is read but not used
 * here (services, which the controller configures; service-specific template parts) is a note.
 */
export function readNotificationCatalog(
  data: Readonly<Record<string, unknown>> | undefined,
  origin: Origin,
  problems: Problem[],
  notes: string[],
): NotificationCatalog {
  const catalog: NotificationCatalog = { triggers: {}, templates: {} };
  const where = `${origin.file}: document ${origin.document}: ${NOTIFICATION_CONFIGMAP}`;
  for (const [key, raw] of Object.entries(data ?? {})) {
    const path = `data[${JSON.stringify(key)}]`;
    const problem = (message: string) => problems.push({ ...origin, path, message });
    if (typeof raw !== "string") {
      problem("a ConfigMap value is a string");
      continue;
    }
    let value: unknown;
    try {
      value = parseYaml(raw, { maxAliasCount: MAX_ALIAS_COUNT });
    } catch (e) {
      problem(`not YAML: ${(e as Error).message.split("\n")[0]}`);
      continue;
    }
    const name = key.slice(key.indexOf(".") + 1);
    if (
      (key.startsWith("trigger.") || key.startsWith("template.")) &&
      Object.hasOwn(Object.prototype, name)
    ) {
      // A name every object inherits would read as the table's own entry (or replace its prototype).
      problem(`"${name}" is a name every object inherits (constructor, toString, __proto__, …): rename it`);
      continue;
    }
    if (key.startsWith("trigger.")) {
      const conditions = readTrigger(value, problem);
      if (conditions) catalog.triggers[key.slice("trigger.".length)] = conditions;
    } else if (key.startsWith("template.")) {
      const message = readTemplate(value, problem, (text) => notes.push(`${where}: ${path}: ${text}`));
      if (message !== undefined) catalog.templates[key.slice("template.".length)] = { message };
    } else {
      notes.push(
        `${where}: ${path} is not read: services are the controller's (notifications.services), subscriptions the rollout's annotations`,
      );
    }
  }
  return catalog;
}

function readTrigger(value: unknown, problem: (m: string) => void): TriggerCondition[] | undefined {
  const parsed = z.array(TriggerConditionSchema).min(1).safeParse(value);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    problem(
      `a trigger is a list of {send: [template...], when: condition}: ${issue ? `${issue.path.join(".") || "value"}: ${issue.message}` : ""}`,
    );
    return undefined;
  }
  let ok = true;
  parsed.data.forEach((c, i) => {
    const refused = c.when === undefined ? undefined : whenProblem(c.when);
    if (refused !== undefined) {
      problem(`[${i}].when: ${refused}`);
      ok = false;
    }
  });
  return ok ? parsed.data : undefined;
}

/**
 * A template's message. Its service-specific parts (`slack.attachments`, `email.subject`) are not
 * sent, and a message the project cannot fill (a Go template action such as `{{add …}}`) is not
 * used: the trigger's default message is sent instead; both are notes, not refusals, so Argo's own
 * catalog loads.
 */
function readTemplate(
  value: unknown,
  problem: (m: string) => void,
  note: (m: string) => void,
): string | undefined {
  if (value === null || typeof value !== "object" || Array.isArray(value)) {
    problem("a template is a mapping with a message");
    return undefined;
  }
  const { message, ...rest } = value as Record<string, unknown>;
  for (const part of Object.keys(rest)) note(`${part} is not sent: each service sends the message`);
  const text = typeof message === "string" ? message.trim() : "";
  if (text === "") {
    note("has no message: the trigger's default message is sent");
    return undefined;
  }
  const parsed = parseTemplate(text);
  if ("problems" in parsed) {
    note(`message not used (${parsed.problems.join("; ")}): the trigger's default message is sent`);
    return undefined;
  }
  return text;
}

/** How a subscription's trigger is delivered: on its built-in event, on its custom conditions, or not at all. */
export type ResolvedTrigger =
  | { kind: "built-in"; message?: string; unevaluated?: string[] }
  | { kind: "custom"; conditions: Array<{ when?: string; message: string }> }
  | { kind: "unknown" };

/**
 * What a subscription's trigger means with the catalog: a built-in trigger (its message from the
 * catalog's template when the ConfigMap redefines it, whose `when` is not evaluated: the trigger
 * fires on its event), a custom trigger of the catalog (each condition with its message: the last
 * of its templates that has one), or unknown (Argo's controller ignores it: a warning).
 */
export function resolveTrigger(trigger: string, catalog: NotificationCatalog | undefined): ResolvedTrigger {
  const conditions =
    catalog && Object.hasOwn(catalog.triggers, trigger) ? catalog.triggers[trigger] : undefined;
  const messageOf = (send: readonly string[]) =>
    send
      .map((t) =>
        catalog && Object.hasOwn(catalog.templates, t) ? catalog.templates[t]?.message : undefined,
      )
      .filter((m): m is string => m !== undefined)
      .at(-1);
  if (isBuiltInTrigger(trigger)) {
    if (!conditions) return { kind: "built-in" };
    const first = conditions[0];
    const message = first ? messageOf(first.send) : undefined;
    const unevaluated = conditions.flatMap((c) => (c.when === undefined ? [] : [c.when]));
    return {
      kind: "built-in",
      ...(message !== undefined ? { message } : {}),
      ...(unevaluated.length > 0 ? { unevaluated } : {}),
    };
  }
  if (!conditions) return { kind: "unknown" };
  return {
    kind: "custom",
    conditions: conditions.map((c) => ({
      ...(c.when !== undefined ? { when: c.when } : {}),
      message: messageOf(c.send) ?? `Rollout {{.rollout.name}}: ${trigger}`,
    })),
  };
}
