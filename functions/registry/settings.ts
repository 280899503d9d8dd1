import { z } from "zod";

/**
 * Which registry records a rollout's outcome, from its target's settings: an MLflow tracking
 * server when the target names one (`mlflow`), else the SageMaker Model Registry when the target is
 * a SageMaker endpoint with a `modelPackageGroupName`; none otherwise.
 */
export const MlflowSettingsSchema = z
  .object({
    /** The tracking server's base URL (`http://mlflow:5000`); the REST API is under `/api/2.0/mlflow`. */
    trackingUri: z.url(),
    /** The registered model's name. */
    model: z.string().min(1),
    /** The alias moved to the promoted version. */
    alias: z
      .string()
      .regex(/^[A-Za-z_][A-Za-z0-9_-]*$/, "an MLflow alias: letters, digits, _ and -")
      .default("champion"),
  })
  .strict();

export const RegistrySettingsSchema = z.discriminatedUnion("type", [
  MlflowSettingsSchema.extend({ type: z.literal("mlflow") }),
  z.object({ type: z.literal("sagemaker"), modelPackageGroupName: z.string().min(1) }).strict(),
]);
export type RegistrySettings = z.infer<typeof RegistrySettingsSchema>;

/** The registry a target's settings name, or undefined. */
export function registryOf(target: unknown): RegistrySettings | undefined {
  if (target === null || typeof target !== "object") return undefined;
  const t = target as { type?: unknown; mlflow?: unknown; modelPackageGroupName?: unknown };
  const mlflow = MlflowSettingsSchema.safeParse(t.mlflow);
  if (mlflow.success) return { type: "mlflow", ...mlflow.data };
  if (t.type === "sagemaker" && typeof t.modelPackageGroupName === "string") {
    return { type: "sagemaker", modelPackageGroupName: t.modelPackageGroupName };
  }
  return undefined;
}

/** A model package version ARN (`arn:aws:sagemaker:<region>:<account>:model-package/<group>/<version>`). */
export const MODEL_PACKAGE_ARN = /^arn:aws[a-z-]*:sagemaker:[a-z0-9-]+:\d{12}:model-package\/[^/]+\/\d+$/;

/**
 * The model a revision released: its package ARN when the image is one, and its version: the
 * package's, or a tag `7` / `v7`.
 */
export function modelOf(revision: { image: string; tag: string | null }): {
  modelPackage?: string;
  version: string | null;
} {
  const pkg = MODEL_PACKAGE_ARN.test(revision.image) ? revision.image : undefined;
  const version = pkg?.split("/").at(-1) ?? revision.tag?.match(/^v?(\d+)$/)?.[1] ?? null;
  return { ...(pkg ? { modelPackage: pkg } : {}), version };
}
