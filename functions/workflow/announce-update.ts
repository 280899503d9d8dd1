import { firedConditions } from "../../statemachine/notification-object.ts";
import { lifecycleEvent } from "../events/port.ts";
import { appendEvent } from "../store/schema.ts";
import { update } from "../store/update.ts";
import type { WorkflowDeps } from "./deps.ts";
import { publishOnce } from "./effects.ts";
import { publish } from "./item.ts";
import type { BeginPayload, WorkflowContext } from "./payloads.ts";

/**
 * Begin's announcements once the candidate is in place: `RolloutUpdated` (Argo's
 * `on-rollout-updated`), then a `NotificationTriggered` for each custom trigger condition of the
 * notification ConfigMap that holds for the new revision. Each is published once per execution; a
 * `when` that fails to run fires nothing and is recorded on the rollout as a
 * `NotificationTriggerError` event (Argo's controller logs it).
 */
export async function announceUpdate(
  deps: WorkflowDeps,
  payload: BeginPayload,
  context: WorkflowContext,
): Promise<void> {
  const label = context.tag ?? context.digest;
  await publish(
    deps,
    context,
    "RolloutUpdated",
    `Rollout updated to revision ${context.revision} (${label})`,
    null,
  );
  if (!payload.customTriggers) return;
  const { fired, errors } = firedConditions(payload.customTriggers, context);
  for (const { trigger, condition } of fired) {
    const event = lifecycleEvent("NotificationTriggered", {
      rollout: context.rollout,
      revision: { revision: context.revision, image: context.image, digest: context.digest },
      step: null,
      message: `Trigger ${trigger}${condition > 0 ? `[${condition}]` : ""} fired for revision ${context.revision} (${label})`,
      atMs: deps.clock.now(),
      ...(context.pass ? { pass: context.pass } : {}),
    });
    await publishOnce(deps, context, { ...event, detail: { ...event.detail, trigger, condition } });
  }
  if (errors.length === 0) return;
  await update(deps.store, context.rollout, "latest", (latest) =>
    latest.executionArn === context.executionArn
      ? {
          ...latest,
          events: errors.reduce(
            (events, message) =>
              appendEvent(events, { at: deps.clock.now(), type: "NotificationTriggerError", message }),
            latest.events,
          ),
        }
      : null,
  );
}
