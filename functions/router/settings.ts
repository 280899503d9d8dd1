import { z } from "zod";
import { CompareSchema } from "./config.ts";

/**
 * A target's request for a model router (`router: {type: model, ...}` on the rollout's target):
 * sticky cohorts by a user key, the salt, and how mirrored answers are compared. The local proxy
 * applies it to its own model routing; the construct deploys the router function for it.
 */
export const ModelRouterSettingsSchema = z
  .object({
    type: z.literal("model"),
    /** Sticky cohorts (default) or a per-request split. */
    sticky: z.boolean().default(true),
    /** Cohort salt; absent = the candidate's version, so each candidate gets another first cohort. */
    salt: z.string().min(1).max(128).optional(),
    /** Where the user id is read: a header, then a top-level JSON body field. */
    key: z
      .object({
        header: z.string().min(1).max(128).default("x-user-id"),
        field: z.string().min(1).max(128).default("user"),
      })
      .strict()
      .default({ header: "x-user-id", field: "user" }),
    compare: CompareSchema.default({ path: "label", kind: "class", absolute: 0, relative: 0 }),
  })
  .strict();
