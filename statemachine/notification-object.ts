import { z } from "zod";
import { compile as compileExpr, fromJSONValue } from "./expr/index.ts";
import { WHEN_ENV } from "./notification-catalog.ts";
import { isBuiltInTrigger } from "./notifications.ts";
import type { RolloutSpec } from "./spec.ts";

/**
 * The custom triggers Begin evaluates for each new revision, and the rollout object their `when`
 * conditions read (the compiler embeds both in Begin's payload).
 */
export const CustomTriggersSchema = z.object({
  /** The rollout object as known when the workflow is compiled; the revision's fields are filled at Begin. */
  rollout: z.record(z.string(), z.unknown()),
  triggers: z.array(
    z.object({
      trigger: z.string().min(1),
      condition: z.number().int().nonnegative(),
      when: z.string().optional(),
    }),
  ),
});
export type CustomTriggers = z.infer<typeof CustomTriggersSchema>;

/**
 * The custom triggers of the rollout's notification ConfigMap (not the built-in ones, which fire
 * on their own lifecycle events), each condition apart; undefined when there are none.
 */
export function customTriggersOf(spec: RolloutSpec): CustomTriggers | undefined {
  const triggers = Object.entries(spec.notificationCatalog?.triggers ?? {})
    .filter(([name]) => !isBuiltInTrigger(name))
    .flatMap(([trigger, conditions]) =>
      conditions.map((c, condition) => ({
        trigger,
        condition,
        ...(c.when !== undefined ? { when: c.when } : {}),
      })),
    );
  if (triggers.length === 0) return undefined;
  return {
    rollout: {
      apiVersion: "argoproj.io/v1alpha1",
      kind: "Rollout",
      metadata: { name: spec.name },
      spec: { replicas: spec.replicas, strategy: { [spec.strategy]: {} } },
    },
    triggers,
  };
}

/** What Begin knows of the revision that fills the rollout object. */
export interface RevisionFields {
  revision: number;
  image: string;
  digest: string;
}

/**
 * The rollout object a `when` reads, as Argo's controller hands it to expr (docs/notifications.md
 * lists the fields): the compiled part, the revision's image as the pod template's only container,
 * and the status of a rollout that has just been updated.
 */
export function rolloutObject(
  base: Readonly<Record<string, unknown>>,
  revision: RevisionFields,
): Record<string, unknown> {
  const spec = (base.spec ?? {}) as Record<string, unknown>;
  return {
    ...base,
    metadata: {
      ...(base.metadata as Record<string, unknown>),
      annotations: { "rollout.argoproj.io/revision": String(revision.revision) },
    },
    spec: { ...spec, template: { spec: { containers: [{ image: revision.image }] } } },
    status: { phase: "Progressing", currentStepIndex: 0, currentPodHash: revision.digest },
  };
}

/**
 * The conditions that fire for a revision: those without `when`, and those whose `when` is true
 * (as in Argo, a result other than `true` does not fire, and an error fires nothing: it is
 * returned to be logged).
 */
export function firedConditions(
  custom: CustomTriggers,
  revision: RevisionFields,
): { fired: Array<{ trigger: string; condition: number }>; errors: string[] } {
  const env = new Map([["rollout", fromJSONValue(rolloutObject(custom.rollout, revision))]]);
  const fired: Array<{ trigger: string; condition: number }> = [];
  const errors: string[] = [];
  for (const t of custom.triggers) {
    if (t.when === undefined) {
      fired.push({ trigger: t.trigger, condition: t.condition });
      continue;
    }
    try {
      if (compileExpr(t.when, WHEN_ENV).run(env) === true)
        fired.push({ trigger: t.trigger, condition: t.condition });
    } catch (e) {
      errors.push(`trigger ${t.trigger}[${t.condition}].when: ${(e as Error).message}`);
    }
  }
  return { fired, errors };
}
