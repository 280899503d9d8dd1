import { z } from "zod";
import { type Origin, zodProblems } from "./analysis-resolve.ts";
import { normalizeNative } from "./native.ts";
import type { Problem } from "./problems.ts";
import type { RolloutSpec } from "./spec.ts";

/**
 * The native reference's own descriptor layout (an environment file such as
 * `envconfig/shop/shop/prod.yml`), read as written: its `rollout:` block — `strategy: traffic`,
 * `traffic: {steps, bake, testers, scaleDownDelay}`, `approvalsBetween`, `onFailure`, `onDrift` and
 * `health` — becomes the flat native spec, so both layouts give the same rollout. The rest of a
 * descriptor (its targets, its router) describes the environment, which `addRollout`'s target
 * describes here: those keys are skipped with a note.
 */

const Duration = z.union([z.number(), z.string()]);

const DescriptorRolloutSchema = z
  .object({
    strategy: z.string(),
    traffic: z
      .object({
        steps: z.array(z.unknown()).min(1).max(20, "at most 20 steps"),
        bake: Duration.optional(),
        testers: z.object({ header: z.string().optional(), tag: z.string().optional() }).strict().optional(),
        scaleDownDelay: Duration.optional(),
        onDrift: z.enum(["pause", "ignore"]).optional(),
        replicas: z.literal("proportional").optional(),
      })
      .strict(),
    approvalsBetween: z.array(z.union([z.string(), z.number()])).optional(),
    onFailure: z.enum(["rollback-wave", "rollback-all", "rollback", "stop"]).optional(),
    onDrift: z.enum(["pause", "ignore"]).optional(),
    health: z.unknown().optional(),
    waves: z.unknown().optional(),
    /** The rollout's false-rollback budget, as in the flat native form. */
    errorBudget: z.unknown().optional(),
  })
  .strict();

/** True for a descriptor: no Kubernetes `apiVersion`/`kind`, a `rollout:` mapping. */
export function isDescriptor(doc: unknown): boolean {
  if (doc === null || typeof doc !== "object" || Array.isArray(doc)) return false;
  const d = doc as Record<string, unknown>;
  return (
    d.apiVersion === undefined &&
    d.kind === undefined &&
    d.rollout !== null &&
    typeof d.rollout === "object" &&
    !Array.isArray(d.rollout)
  );
}

/** The application's name: `name:` or `application:` beside `rollout:`, else `envconfig/<team>/<app>/<env>.yml`. */
function applicationName(doc: Record<string, unknown>, file: string): string | undefined {
  for (const key of ["name", "application"]) if (typeof doc[key] === "string") return doc[key] as string;
  const m = /(?:^|\/)envconfig\/[^/]+\/([^/]+)\/[^/]+\.ya?ml$/.exec(file);
  return m?.[1];
}

/** Where each flat field lives in the descriptor, for problems. */
export const PATHS = {
  steps: "rollout.traffic.steps",
  bake: "rollout.traffic.bake",
  testers: "rollout.traffic.testers",
  scaleDownDelay: "rollout.traffic.scaleDownDelay",
  approvalsBetween: "rollout.approvalsBetween",
  onFailure: "rollout.onFailure",
  onDrift: "rollout.onDrift",
  health: "rollout.health",
  waves: "rollout.waves",
  errorBudget: "rollout.errorBudget",
  name: "name",
};

/** Reads a descriptor's rollout; problems name the descriptor's own paths, notes what was skipped. */
export function normalizeDescriptor(
  doc: Record<string, unknown>,
  origin: Origin,
  problems: Problem[],
  notes: string[],
): RolloutSpec | undefined {
  const parsed = DescriptorRolloutSchema.safeParse(doc.rollout);
  if (!parsed.success) {
    problems.push(...zodProblems(parsed.error, origin, "rollout"));
    return undefined;
  }
  const r = parsed.data;
  const before = problems.length;
  if (r.strategy !== "traffic") {
    problems.push({
      ...origin,
      path: "rollout.strategy",
      message: `strategy "${r.strategy}" is not read here: the percentage rollout is strategy: traffic`,
    });
  }
  if (r.traffic.testers?.tag !== undefined) {
    problems.push({
      ...origin,
      path: "rollout.traffic.testers.tag",
      message: "testers.tag routes by a Cloud Run revision tag: on AWS targets give testers.header",
    });
  }
  if (r.traffic.onDrift !== undefined && r.onDrift !== undefined && r.traffic.onDrift !== r.onDrift) {
    problems.push({
      ...origin,
      path: "rollout.traffic.onDrift",
      message: `onDrift is both ${r.traffic.onDrift} (traffic) and ${r.onDrift} (rollout): give it once`,
    });
  }
  const name = applicationName(doc, origin.file);
  if (name === undefined) {
    problems.push({
      ...origin,
      path: "name",
      message:
        "the descriptor does not name its application: add `name: shop` beside `rollout:` (or keep it at envconfig/<team>/<application>/<environment>.yml)",
    });
  }
  const skipped = Object.keys(doc).filter((k) => !["rollout", "name", "application"].includes(k));
  if (skipped.length > 0) {
    notes.push(
      `${origin.file}: document ${origin.document ?? 1}: skipped ${skipped.join(", ")} (the environment: addRollout's target describes it)`,
    );
  }
  if (r.traffic.replicas !== undefined) {
    notes.push(
      `${origin.file}: document ${origin.document ?? 1}: rollout.traffic.replicas: proportional has no effect: AWS targets size the candidate themselves`,
    );
  }
  if (problems.length !== before || name === undefined) return undefined;
  const flat = {
    apiVersion: "sfn-rollouts/v1",
    name,
    strategy: "canary",
    steps: r.traffic.steps,
    ...(r.traffic.bake !== undefined ? { bake: r.traffic.bake } : {}),
    ...(r.traffic.testers?.header !== undefined ? { testers: { header: r.traffic.testers.header } } : {}),
    ...(r.traffic.scaleDownDelay !== undefined ? { scaleDownDelay: r.traffic.scaleDownDelay } : {}),
    ...(r.approvalsBetween !== undefined ? { approvalsBetween: r.approvalsBetween } : {}),
    // rollback-all is the default of this strategy; with one target both rollbacks return it to stable.
    onFailure:
      r.waves !== undefined ? (r.onFailure ?? "rollback-all") : r.onFailure === "stop" ? "stop" : "rollback",
    ...(r.waves !== undefined ? { waves: r.waves } : {}),
    ...((r.onDrift ?? r.traffic.onDrift) !== undefined ? { onDrift: r.onDrift ?? r.traffic.onDrift } : {}),
    ...(r.health !== undefined ? { health: r.health } : {}),
    ...(r.errorBudget !== undefined ? { errorBudget: r.errorBudget } : {}),
  };
  return normalizeNative(flat, { ...origin, object: origin.object ?? `descriptor ${name}` }, problems, PATHS);
}
