import { z } from "zod";
import type { ExecutionDescription, LocalStepFunctions } from "../asl/engine.ts";
import { AwsApiError, asApiError, epochSeconds } from "./protocol.ts";

const SFN_ERRORS = [
  "ExecutionAlreadyExists",
  "ExecutionDoesNotExist",
  "StateMachineDoesNotExist",
  "StateMachineAlreadyExists",
  "InvalidName",
  "InvalidArn",
  "InvalidDefinition",
  "InvalidExecutionInput",
  "InvalidOutput",
  "InvalidToken",
  "TaskDoesNotExist",
  "TaskTimedOut",
] as const;

const Status = z.enum(["RUNNING", "SUCCEEDED", "FAILED", "TIMED_OUT", "ABORTED"]);

const schemas = {
  StartExecution: z.object({
    stateMachineArn: z.string(),
    name: z.string().optional(),
    input: z.string().optional(),
  }),
  DescribeExecution: z.object({ executionArn: z.string() }),
  StopExecution: z.object({
    executionArn: z.string(),
    error: z.string().optional(),
    cause: z.string().optional(),
  }),
  SendTaskSuccess: z.object({ taskToken: z.string(), output: z.string() }),
  SendTaskFailure: z.object({
    taskToken: z.string(),
    error: z.string().optional(),
    cause: z.string().optional(),
  }),
  SendTaskHeartbeat: z.object({ taskToken: z.string() }),
  ListExecutions: z.object({
    stateMachineArn: z.string(),
    statusFilter: Status.optional(),
    maxResults: z.number().int().min(0).max(1000).optional(),
    nextToken: z.string().optional(),
  }),
  GetExecutionHistory: z.object({
    executionArn: z.string(),
    reverseOrder: z.boolean().optional(),
    maxResults: z.number().int().min(0).max(1000).optional(),
    nextToken: z.string().optional(),
    includeExecutionData: z.boolean().optional(),
  }),
  ListStateMachines: z.object({ maxResults: z.number().int().optional(), nextToken: z.string().optional() }),
  DescribeStateMachine: z.object({ stateMachineArn: z.string() }),
  ListTagsForResource: z.object({ resourceArn: z.string() }),
} as const;

type Operation = keyof typeof schemas;

/**
 * Answers one Step Functions call against the local engine. `parse` validates the body with the
 * operation's zod schema (the façade's protocol layer supplies it). `region` is the one the
 * request is signed for: `ListStateMachines` lists that region's state machines, as on AWS (a
 * state machine whose ARN names no AWS region, `local`, is in every region).
 */
export function handleSfn(
  sfn: LocalStepFunctions,
  operation: string,
  parse: <T extends z.ZodType>(schema: T) => z.infer<T>,
  region?: string,
): unknown {
  try {
    switch (operation as Operation) {
      case "StartExecution": {
        const body = parse(schemas.StartExecution);
        const started = sfn.startExecution(body);
        return { executionArn: started.executionArn, startDate: epochSeconds(started.startDate) };
      }
      case "DescribeExecution":
        return describe(sfn.describeExecution(parse(schemas.DescribeExecution).executionArn));
      case "StopExecution": {
        const body = parse(schemas.StopExecution);
        const stopped = sfn.stopExecution(body.executionArn, body);
        return { stopDate: epochSeconds(stopped.stopDate) };
      }
      case "SendTaskSuccess": {
        const body = parse(schemas.SendTaskSuccess);
        sfn.sendTaskSuccess(body.taskToken, body.output);
        return {};
      }
      case "SendTaskFailure": {
        const body = parse(schemas.SendTaskFailure);
        sfn.sendTaskFailure(body.taskToken, body.error, body.cause);
        return {};
      }
      case "SendTaskHeartbeat":
        sfn.sendTaskHeartbeat(parse(schemas.SendTaskHeartbeat).taskToken);
        return {};
      case "ListExecutions": {
        const body = parse(schemas.ListExecutions);
        const all = sfn.listExecutions(body);
        const { items, nextToken } = page(all, body.maxResults, body.nextToken);
        return {
          executions: items.map((d) => ({
            executionArn: d.executionArn,
            stateMachineArn: d.stateMachineArn,
            name: d.name,
            status: d.status,
            startDate: epochSeconds(d.startDate),
            stopDate: epochSeconds(d.stopDate),
          })),
          ...(nextToken === undefined ? {} : { nextToken }),
        };
      }
      case "GetExecutionHistory": {
        const body = parse(schemas.GetExecutionHistory);
        const all = sfn.getExecutionHistory(body.executionArn, body);
        const { items, nextToken } = page(all, body.maxResults, body.nextToken);
        return {
          events: items.map((event) => ({ ...event, timestamp: epochSeconds(event.timestamp) })),
          ...(nextToken === undefined ? {} : { nextToken }),
        };
      }
      case "ListStateMachines":
        parse(schemas.ListStateMachines);
        return {
          stateMachines: sfn
            .listStateMachines()
            .filter((m) => inRegion(m.stateMachineArn, region))
            .map((m) => ({
              stateMachineArn: m.stateMachineArn,
              name: m.name,
              type: m.type,
              creationDate: epochSeconds(m.creationDate),
            })),
        };
      case "DescribeStateMachine": {
        const machine = machineOf(sfn, parse(schemas.DescribeStateMachine).stateMachineArn);
        return {
          stateMachineArn: machine.stateMachineArn,
          name: machine.name,
          status: "ACTIVE",
          definition: JSON.stringify(machine.definition),
          type: machine.type,
          creationDate: epochSeconds(machine.creationDate),
        };
      }
      case "ListTagsForResource": {
        const arn = parse(schemas.ListTagsForResource).resourceArn;
        const machine = sfn.listStateMachines().find((m) => m.stateMachineArn === arn);
        if (!machine) throw new AwsApiError("ResourceNotFound", `Resource not found: '${arn}'`);
        return { tags: Object.entries(machine.tags ?? {}).map(([key, value]) => ({ key, value })) };
      }
      default:
        throw new AwsApiError(
          "UnknownOperationException",
          `AWSStepFunctions.${operation} is not supported locally`,
        );
    }
  } catch (error) {
    throw asApiError(error, SFN_ERRORS);
  }
}

function describe(d: ExecutionDescription): Record<string, unknown> {
  return {
    ...d,
    startDate: epochSeconds(d.startDate),
    stopDate: epochSeconds(d.stopDate),
    inputDetails: { included: true },
    ...(d.output === undefined ? {} : { outputDetails: { included: true } }),
  };
}

function machineOf(sfn: LocalStepFunctions, arn: string) {
  const machine = sfn.listStateMachines().find((m) => m.stateMachineArn === arn);
  if (!machine) throw new AwsApiError("StateMachineDoesNotExist", `State Machine Does Not Exist: '${arn}'`);
  return machine;
}

/** An ARN in `region` (or in no AWS region: `arn:aws:states:local:…`); any ARN without a region asked. */
function inRegion(arn: string, region: string | undefined): boolean {
  const of = arn.split(":")[3] ?? "";
  return region === undefined || of === region || !/^[a-z]{2}(-[a-z]+)+-\d+$/.test(of);
}

/** Pages a list: `nextToken` is the offset of the next page. */
function page<T>(items: T[], maxResults: number | undefined, nextToken: string | undefined) {
  const start = nextToken === undefined ? 0 : Number(nextToken);
  if (!Number.isInteger(start) || start < 0)
    throw new AwsApiError("InvalidToken", "Invalid Token: bad nextToken");
  const size = maxResults === undefined || maxResults === 0 ? 100 : maxResults;
  const slice = items.slice(start, start + size);
  return { items: slice, nextToken: start + size < items.length ? String(start + size) : undefined };
}
