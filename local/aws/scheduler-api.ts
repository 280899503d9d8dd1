import { z } from "zod";
import { AwsApiError, asApiError, epochSeconds } from "./protocol.ts";
import type { LocalScheduler } from "./scheduler.ts";

const CreateSchedule = z.object({
  GroupName: z.string().optional(),
  ScheduleExpression: z.string(),
  ScheduleExpressionTimezone: z.string().optional(),
  ActionAfterCompletion: z.enum(["NONE", "DELETE"]).optional(),
  State: z.enum(["ENABLED", "DISABLED"]).optional(),
  Description: z.string().optional(),
  FlexibleTimeWindow: z.object({ Mode: z.string(), MaximumWindowInMinutes: z.number().optional() }),
  Target: z.object({ Arn: z.string(), RoleArn: z.string(), Input: z.string().optional() }),
  ClientToken: z.string().optional(),
});

const SCHEDULER_ERRORS = ["ConflictException", "ResourceNotFoundException", "ValidationException"];
const STATUS: Record<string, number> = {
  ConflictException: 409,
  ResourceNotFoundException: 404,
  ValidationException: 400,
};

/**
 * EventBridge Scheduler (REST JSON): `CreateSchedule` (`POST /schedules/{Name}`), `GetSchedule`
 * (`GET`) and `DeleteSchedule` (`DELETE`, `?groupName=`), against the local scheduler.
 */
export async function handleScheduler(
  scheduler: LocalScheduler,
  method: string,
  name: string,
  query: URLSearchParams,
  parse: <T extends z.ZodType>(schema: T) => z.infer<T>,
): Promise<unknown> {
  try {
    const groupName = query.get("groupName") ?? undefined;
    if (method === "POST") {
      const body = parse(CreateSchedule);
      return await scheduler
        .create({
          name,
          ...(body.GroupName === undefined ? {} : { groupName: body.GroupName }),
          scheduleExpression: body.ScheduleExpression,
          ...(body.ScheduleExpressionTimezone === undefined
            ? {}
            : { scheduleExpressionTimezone: body.ScheduleExpressionTimezone }),
          ...(body.ActionAfterCompletion === undefined
            ? {}
            : { actionAfterCompletion: body.ActionAfterCompletion }),
          ...(body.State === undefined ? {} : { state: body.State }),
          ...(body.Description === undefined ? {} : { description: body.Description }),
          target: {
            arn: body.Target.Arn,
            roleArn: body.Target.RoleArn,
            ...(body.Target.Input === undefined ? {} : { input: body.Target.Input }),
          },
        })
        .then((created) => ({ ScheduleArn: created.scheduleArn }));
    }
    if (method === "GET") {
      const s = scheduler.get(name, groupName);
      return {
        Arn: s.arn,
        Name: s.name,
        GroupName: s.groupName,
        ScheduleExpression: s.scheduleExpression,
        ScheduleExpressionTimezone: s.scheduleExpressionTimezone ?? "UTC",
        State: s.state ?? "ENABLED",
        ActionAfterCompletion: s.actionAfterCompletion ?? "NONE",
        FlexibleTimeWindow: { Mode: "OFF" },
        CreationDate: epochSeconds(s.creationDate),
        Target: { Arn: s.target.arn, RoleArn: s.target.roleArn, Input: s.target.input },
      };
    }
    if (method === "DELETE") {
      await scheduler.delete(name, groupName);
      return {};
    }
    throw new AwsApiError("ValidationException", `${method} /schedules is not supported locally`);
  } catch (error) {
    const api = asApiError(error, SCHEDULER_ERRORS);
    throw new AwsApiError(api.name, api.message, STATUS[api.name] ?? api.status);
  }
}
