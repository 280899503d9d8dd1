import { resolveTrigger } from "../notification-catalog.ts";
import { NOTIFICATION_TRIGGERS, SUBSCRIBE_ANNOTATION } from "../notifications.ts";
import { type Finding, finding } from "./finding.ts";
import type { ReviewSubject } from "./subject.ts";

/**
 * `notification-unknown-trigger`: a subscription whose trigger is neither built in nor defined in
 * the argo-rollouts-notification-configmap given with the files. It loads (Argo's controller
 * ignores it too) and nobody is ever told: a warning at the annotation or the native field.
 */
export function notificationFindings(subject: ReviewSubject): Finding[] {
  const { spec } = subject;
  return (spec.notifications ?? []).flatMap((s, i) => {
    if (resolveTrigger(s.trigger, spec.notificationCatalog).kind !== "unknown") return [];
    const path =
      subject.form === "argo"
        ? `metadata.annotations[${JSON.stringify(`${SUBSCRIBE_ANNOTATION}${s.trigger}.${s.service}`)}]`
        : `notifications[${i}].trigger`;
    return [
      finding(
        "notification-unknown-trigger",
        "warning",
        { ...subject.rollout, path },
        {
          message: `trigger ${JSON.stringify(s.trigger)} is neither one of the nine built-in triggers nor defined in the argo-rollouts-notification-configmap: the subscription is ignored`,
          fix: `give the argo-rollouts-notification-configmap that defines trigger.${s.trigger} with the spec files, or subscribe to a built-in trigger (${Object.keys(NOTIFICATION_TRIGGERS).join(", ")})`,
        },
      ),
    ];
  });
}
