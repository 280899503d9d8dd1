import { z } from "zod";
import { MODEL_ROUTING_FIELDS } from "./config.ts";

/**
 * A target's request for a model router (`router: {type: model, ...}` on the rollout's target):
 * sticky cohorts by a user key, the salt, and how mirrored answers are compared. The local proxy
 * applies it to its own model routing; the construct deploys the router function for it.
 */
export const ModelRouterSettingsSchema = z
  .object({
    type: z.literal("model"),
    ...MODEL_ROUTING_FIELDS,
  })
  .strict();
