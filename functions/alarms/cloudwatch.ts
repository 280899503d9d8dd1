import { type CloudWatchClient, DescribeAlarmsCommand } from "@aws-sdk/client-cloudwatch";
import { AlarmReadError, type AlarmReader, type AlarmState, type AlarmValue } from "./port.ts";

const VALUES = new Set<AlarmValue>(["OK", "ALARM", "INSUFFICIENT_DATA"]);

/** The alarm port on CloudWatch: `DescribeAlarms` by name, metric and composite alarms alike. */
export class CloudWatchAlarms implements AlarmReader {
  readonly #client: CloudWatchClient;

  constructor(client: CloudWatchClient) {
    this.#client = client;
  }

  async describe(names: readonly string[]): Promise<AlarmState[]> {
    if (names.length === 0) return [];
    const found: AlarmState[] = [];
    let nextToken: string | undefined;
    try {
      do {
        const page = await this.#client.send(
          new DescribeAlarmsCommand({
            AlarmNames: [...names],
            AlarmTypes: ["MetricAlarm", "CompositeAlarm"],
            ...(nextToken ? { NextToken: nextToken } : {}),
          }),
        );
        for (const alarm of [...(page.MetricAlarms ?? []), ...(page.CompositeAlarms ?? [])]) {
          if (!alarm.AlarmName) continue;
          const value = alarm.StateValue as AlarmValue | undefined;
          found.push({
            name: alarm.AlarmName,
            value: value && VALUES.has(value) ? value : "INSUFFICIENT_DATA",
            reason: alarm.StateReason ?? "",
          });
        }
        nextToken = page.NextToken;
      } while (nextToken);
    } catch (error) {
      const why = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
      throw new AlarmReadError(`DescribeAlarms of ${names.join(", ")} failed: ${why}`, { cause: error });
    }
    return found;
  }
}
