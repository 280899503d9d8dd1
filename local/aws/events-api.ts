import { z } from "zod";
import type { LocalEventBus } from "../events/bus.ts";
import { AwsApiError, asApiError } from "./protocol.ts";

const PutEvents = z.object({
  Entries: z
    .array(
      z.object({
        Source: z.string().optional(),
        DetailType: z.string().optional(),
        Detail: z.string().optional(),
        Resources: z.array(z.string()).optional(),
        Time: z.number().optional(),
        EventBusName: z.string().optional(),
      }),
    )
    .min(1)
    .max(10),
});

/** Answers one EventBridge call (AWS JSON 1.1, `AWSEvents.<Operation>`); only `PutEvents` is needed. */
export async function handleEvents(
  bus: LocalEventBus,
  operation: string,
  parse: <T extends z.ZodType>(schema: T) => z.infer<T>,
): Promise<unknown> {
  try {
    if (operation !== "PutEvents") {
      throw new AwsApiError("UnknownOperationException", `AWSEvents.${operation} is not supported locally`);
    }
    const body = parse(PutEvents);
    return await bus.putEvents(
      body.Entries.map((entry) => ({
        ...entry,
        ...(entry.Time === undefined ? {} : { Time: entry.Time * 1000 }),
      })),
    );
  } catch (error) {
    throw asApiError(error, []);
  }
}
