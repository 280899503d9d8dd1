import { DescribeExecutionCommand, ListExecutionsCommand, type SFNClient } from "@aws-sdk/client-sfn";

/** A state machine's executions as Step Functions describes them, by name. */
export async function listExecutions(
  sfn: SFNClient,
  stateMachineArn: string,
): Promise<Array<{ name: string; status: string; error?: string }>> {
  const list = await sfn.send(new ListExecutionsCommand({ stateMachineArn }));
  const out: Array<{ name: string; status: string; error?: string }> = [];
  for (const e of list.executions ?? []) {
    const d = await sfn.send(new DescribeExecutionCommand({ executionArn: e.executionArn }));
    out.push({ name: e.name ?? "", status: d.status ?? "", ...(d.error ? { error: d.error } : {}) });
  }
  return out.sort((a, b) => a.name.localeCompare(b.name));
}
