import { z } from "zod";
import { MODEL_ROUTING_FIELDS } from "./config.ts";

/**
 * A target's request for a model router (`router: {type: model, ...}` on a sagemaker target, or
 * in the local proxy plugin's config): sticky cohorts by a user key, the salt, and how mirrored
 * answers are compared. The construct deploys the router function for it; the local proxy applies
 * it to its own model routing.
 */
export const ModelRouterSettingsSchema = z
  .object({
    type: z.literal("model"),
    ...MODEL_ROUTING_FIELDS,
  })
  .strict();
