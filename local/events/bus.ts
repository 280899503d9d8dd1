import { randomUUID } from "node:crypto";
import { JSONPath } from "jsonpath-plus";
import type { Clock } from "../../functions/clock.ts";
import {
  busNameOf,
  type ExtractedApiDestination,
  type ExtractedRule,
  type ExtractedTarget,
} from "../asl/extract.ts";
import { LOCAL_ACCOUNT, LOCAL_REGION } from "../asl/intrinsics.ts";
import { matchesPattern } from "./pattern.ts";

/** One `PutEvents` entry, as the SDK sends it. */
export interface PutEventsEntry {
  Source?: string;
  DetailType?: string;
  Detail?: string;
  Resources?: string[];
  /** Epoch ms (the façade converts the SDK's epoch seconds). */
  Time?: number;
  EventBusName?: string;
}

/** `PutEvents`' answer. */
export interface PutEventsResult {
  FailedEntryCount: number;
  Entries: Array<{ EventId?: string; ErrorCode?: string; ErrorMessage?: string }>;
}

/** An event as EventBridge delivers it to targets (and as a rule-started execution gets it as input). */
export interface BusEvent {
  version: "0";
  id: string;
  "detail-type": string;
  source: string;
  account: string;
  time: string;
  region: string;
  resources: string[];
  detail: unknown;
}

/** Where the bus delivers: the runtime wires these to the engine and the Lambda service. */
export interface BusTargets {
  startExecution(stateMachineArn: string, input: string): Promise<void> | void;
  invokeFunction(functionArn: string, event: unknown): Promise<void> | void;
}

/** What an API destination may take to answer, as on EventBridge (5 seconds). */
const API_DESTINATION_TIMEOUT_MS = 5_000;

/** A message a rule published to an SNS topic (email notifications): kept, since nothing sends mail here. */
export interface PublishedMessage {
  topicArn: string;
  rule: string;
  message: string;
}

/** A delivery that did not happen (unknown target kind, a target that refused). */
export interface FailedDelivery {
  rule: string;
  target: string;
  eventId: string;
  error: string;
}

/**
 * The local EventBridge: `PutEvents` builds the event envelope as EventBridge does, matches it
 * against every enabled rule of its bus and delivers it to the rule's targets (a state machine
 * target starts an execution with the event JSON as input, after `Input`/`InputPath`/
 * `InputTransformer`; a Lambda target is invoked asynchronously). So the ECR push rule of the
 * synthesized stack starts the rollout locally exactly as it does on AWS.
 */
export class LocalEventBus {
  readonly #rules = new Map<string, ExtractedRule>();
  readonly #targets: BusTargets;
  readonly #clock: Clock;
  /** Every event put on any bus, in order: what tests and `rollouts get --watch` read. */
  readonly events: Array<{ bus: string; event: BusEvent }> = [];
  readonly failures: FailedDelivery[] = [];
  /** What rules published to SNS topics, in order. */
  readonly published: PublishedMessage[] = [];
  readonly #apiDestinations = new Map<string, ExtractedApiDestination>();

  constructor(options: { targets: BusTargets; clock: Clock }) {
    this.#targets = options.targets;
    this.#clock = options.clock;
  }

  addRule(rule: ExtractedRule): void {
    this.#rules.set(`${rule.eventBusName}/${rule.name}`, rule);
  }

  /** An API destination rule targets can name (the template's are added by the runtime). */
  addApiDestination(destination: ExtractedApiDestination): void {
    this.#apiDestinations.set(destination.arn, destination);
  }

  rules(): ExtractedRule[] {
    return [...this.#rules.values()];
  }

  async putEvents(entries: readonly PutEventsEntry[]): Promise<PutEventsResult> {
    const result: PutEventsResult = { FailedEntryCount: 0, Entries: [] };
    for (const entry of entries) {
      const problem = invalid(entry);
      if (problem !== undefined) {
        result.FailedEntryCount++;
        result.Entries.push(problem);
        continue;
      }
      const bus = busNameOf(entry.EventBusName ?? "default");
      const event: BusEvent = {
        version: "0",
        id: randomUUID(),
        "detail-type": entry.DetailType ?? "",
        source: entry.Source ?? "",
        account: LOCAL_ACCOUNT,
        time: new Date(entry.Time ?? this.#clock.now()).toISOString().replace(/\.\d{3}Z$/, "Z"),
        region: LOCAL_REGION,
        resources: entry.Resources ?? [],
        detail: JSON.parse(entry.Detail ?? "{}"),
      };
      this.events.push({ bus, event });
      await this.#deliver(bus, event);
      result.Entries.push({ EventId: event.id });
    }
    return result;
  }

  async #deliver(bus: string, event: BusEvent): Promise<void> {
    for (const rule of this.#rules.values()) {
      if (!rule.enabled || rule.eventBusName !== bus || rule.eventPattern === undefined) continue;
      if (!matchesPattern(rule.eventPattern, event)) continue;
      for (const target of rule.targets) {
        try {
          const input = targetInput(target, event, rule.name);
          if (/^arn:aws:states:[^:]*:[^:]*:stateMachine:/.test(target.arn)) {
            await this.#targets.startExecution(target.arn, input);
          } else if (/^arn:aws:lambda:/.test(target.arn)) {
            await this.#targets.invokeFunction(target.arn, JSON.parse(input));
          } else if (/^arn:aws:events:[^:]*:[^:]*:api-destination\//.test(target.arn)) {
            await this.#callApiDestination(target.arn, input);
          } else if (/^arn:aws:sns:/.test(target.arn)) {
            this.published.push({ topicArn: target.arn, rule: rule.name, message: parseText(input) });
          } else {
            throw new Error(`target kind not supported locally: ${target.arn}`);
          }
        } catch (error) {
          this.failures.push({
            rule: rule.name,
            target: target.arn,
            eventId: event.id,
            error: (error as Error)?.message ?? String(error),
          });
        }
      }
    }
  }

  /**
   * An API destination target: an HTTP call to its endpoint with the connection's headers and the
   * transformed input as the JSON body. A refused call (not 2xx), a timeout or a header kept in
   * Secrets Manager (unreadable here) is a failed delivery.
   */
  async #callApiDestination(arn: string, body: string): Promise<void> {
    const destination = this.#apiDestinations.get(arn);
    if (destination === undefined) throw new Error(`no API destination ${arn} in the template`);
    if (destination.secretHeaders.length > 0) {
      throw new Error(
        `${destination.logicalId}: header(s) ${destination.secretHeaders.join(", ")} are kept in Secrets Manager, which the embedded runtime cannot read`,
      );
    }
    const response = await fetch(destination.endpoint, {
      method: destination.method,
      headers: { "content-type": "application/json; charset=utf-8", ...destination.headers },
      body,
      redirect: "manual",
      signal: AbortSignal.timeout(API_DESTINATION_TIMEOUT_MS),
    });
    await response.body?.cancel();
    if (response.status < 200 || response.status > 299) {
      throw new Error(`${destination.logicalId}: ${destination.endpoint} answered ${response.status}`);
    }
  }
}

/** An SNS message from a target's input: a JSON string is its text, anything else as sent. */
function parseText(input: string): string {
  try {
    const value = JSON.parse(input) as unknown;
    return typeof value === "string" ? value : input;
  } catch {
    return input;
  }
}

function invalid(entry: PutEventsEntry): { ErrorCode: string; ErrorMessage: string } | undefined {
  if (!entry.Source) return { ErrorCode: "InvalidArgument", ErrorMessage: "Parameter Source is not valid." };
  if (!entry.DetailType)
    return { ErrorCode: "InvalidArgument", ErrorMessage: "Parameter DetailType is not valid." };
  if (entry.Detail === undefined)
    return { ErrorCode: "InvalidArgument", ErrorMessage: "Parameter Detail is not valid." };
  try {
    const detail = JSON.parse(entry.Detail) as unknown;
    if (detail === null || typeof detail !== "object" || Array.isArray(detail))
      throw new Error("not an object");
  } catch {
    return { ErrorCode: "MalformedDetail", ErrorMessage: "Detail is malformed." };
  }
  return undefined;
}

/**
 * What a target receives, as EventBridge computes it: the event itself, or the constant `Input`,
 * or the `InputPath` selection, or the `InputTransformer` template with its `<placeholders>`
 * (inside quotes a string value is inserted raw, outside it is inserted as JSON).
 */
export function targetInput(target: ExtractedTarget, event: BusEvent, ruleName: string): string {
  if (target.input !== undefined) return target.input;
  if (target.inputPath !== undefined) {
    return JSON.stringify(JSONPath({ path: target.inputPath, json: event as object, wrap: false }) ?? null);
  }
  const transformer = target.inputTransformer;
  if (transformer === undefined) return JSON.stringify(event);
  const values: Record<string, unknown> = {
    "aws.events.rule-name": ruleName,
    "aws.events.event": event,
    "aws.events.event.json": event,
    "aws.events.event.ingestion-time": event.time,
  };
  for (const [name, path] of Object.entries(transformer.inputPathsMap)) {
    // A path the event lacks gives no value: the placeholder is filled with nothing (`"<tag>"`
    // becomes `""`), as on EventBridge — not with null.
    const value: unknown = JSONPath({ path, json: event as object, wrap: false });
    values[name] = value === undefined ? "" : value;
  }
  return fillPlaceholders(transformer.inputTemplate, values);
}

/**
 * Fills `<name>` placeholders the way EventBridge does: a placeholder that is a whole JSON string
 * (`"<name>"`) or that sits inside a longer string (`"Rollout <name> aborted"`) gets the value's
 * text, escaped for that string; elsewhere the value is inserted as JSON. Unknown names stay as
 * written.
 */
function fillPlaceholders(template: string, values: Readonly<Record<string, unknown>>): string {
  let out = "";
  let inString = false;
  for (let i = 0; i < template.length; i++) {
    const c = template[i] as string;
    if (c === "\\" && inString) {
      out += template.slice(i, i + 2);
      i++;
      continue;
    }
    if (c === '"') {
      inString = !inString;
      out += c;
      continue;
    }
    const match = c === "<" ? /^<([A-Za-z0-9_.-]+)>/.exec(template.slice(i)) : null;
    if (!match || !Object.hasOwn(values, match[1] as string)) {
      out += c;
      continue;
    }
    const value = values[match[1] as string];
    const whole = inString && template[i - 1] === '"' && template[i + match[0].length] === '"';
    if (whole && typeof value !== "string") {
      // `"<size>"` with a number: the JSON value replaces the quoted placeholder.
      out = `${out.slice(0, -1)}${JSON.stringify(value ?? null)}`;
      i += match[0].length;
      inString = false;
      continue;
    }
    if (inString) {
      const text = typeof value === "string" ? value : JSON.stringify(value ?? null);
      out += JSON.stringify(text).slice(1, -1);
    } else {
      out += JSON.stringify(value ?? null);
    }
    i += match[0].length - 1;
  }
  return out;
}
