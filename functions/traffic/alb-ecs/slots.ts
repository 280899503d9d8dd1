import { z } from "zod";

/** The two sides of an alb-ecs target: each is one target group and one ECS service. */
export const SlotSchema = z.enum(["a", "b"]);
export type Slot = z.infer<typeof SlotSchema>;

/** The slot that is not `slot`. */
export const other = (slot: Slot): Slot => (slot === "a" ? "b" : "a");

/** Exact ALB weights for a percentage: `percent` and `100 − percent` are within 0–999 and keep the ratio exact. */
export function slotWeights(candidate: Slot, percent: number): Record<Slot, number> {
  return candidate === "a" ? { a: percent, b: 100 - percent } : { a: 100 - percent, b: percent };
}

/** The weights as the messages show them. */
export function describeWeights(weights: Readonly<Record<Slot, number>>): string {
  return `ALB weights a=${weights.a}, b=${weights.b}`;
}
