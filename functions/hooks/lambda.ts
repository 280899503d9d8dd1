import { InvokeCommand, type LambdaClient } from "@aws-sdk/client-lambda";
import { HookInvokeError, type HookInvoker } from "./port.ts";

/** The hook port on Lambda: an `Event` (asynchronous) invocation, so a hook may outlast this call. */
export class LambdaHookInvoker implements HookInvoker {
  readonly #client: LambdaClient;

  constructor(client: LambdaClient) {
    this.#client = client;
  }

  async invoke(functionArn: string, payload: unknown): Promise<void> {
    try {
      const out = await this.#client.send(
        new InvokeCommand({
          FunctionName: functionArn,
          InvocationType: "Event",
          Payload: new TextEncoder().encode(JSON.stringify(payload)),
        }),
      );
      if (out.StatusCode !== undefined && out.StatusCode !== 202) {
        throw new Error(`Lambda answered status ${out.StatusCode}`);
      }
    } catch (error) {
      const why = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
      throw new HookInvokeError(`could not invoke ${functionArn}: ${why}`, { cause: error });
    }
  }
}
