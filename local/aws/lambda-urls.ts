import type { ExtractedFunctionUrl } from "../asl/extract.ts";
import { type FunctionUrlAuth, startFunctionUrl } from "./function-url.ts";
import type { LocalLambda } from "./lambda.ts";
import type { LocalCredentials } from "./sigv4-verify.ts";

/** A template's Function URL running on this machine. */
export interface RunningFunctionUrl {
  logicalId: string;
  /** The address as `Fn::GetAtt FunctionUrl` gives it on AWS: with the trailing slash. */
  url: string;
  functionArn: string;
  authType: ExtractedFunctionUrl["authType"];
}

/** The template values of a running URL: `"<LogicalId>.<Attribute>"` → what `Fn::GetAtt` gives. */
export function functionUrlRefs(urls: readonly RunningFunctionUrl[]): Record<string, string> {
  const refs: Record<string, string> = {};
  for (const url of urls) {
    refs[`${url.logicalId}.FunctionUrl`] = url.url;
    refs[`${url.logicalId}.FunctionArn`] = url.functionArn;
    // On AWS the URL's id is the first label of its host; here the host is 127.0.0.1.
    refs[`${url.logicalId}.UrlId`] = url.logicalId.toLowerCase();
  }
  return refs;
}

/**
 * Starts a local Function URL (`startFunctionUrl`: payload 2.0, `RESPONSE_STREAM`) for each of a
 * template's `AWS::Lambda::Url`s, in front of the function it names in the runtime's Lambda
 * service: an `AWS_IAM` URL serves only requests signed with `credentials` for `region` (service
 * `lambda`). Returns them and how to close them all.
 */
export async function startFunctionUrls(
  urls: readonly ExtractedFunctionUrl[],
  lambda: LocalLambda,
  iam: { credentials: LocalCredentials; region: string },
): Promise<{ running: RunningFunctionUrl[]; close(): Promise<void> }> {
  const servers: Array<{ close(): Promise<void> }> = [];
  const close = async () => {
    await Promise.all(servers.map((server) => server.close()));
  };
  const running: RunningFunctionUrl[] = [];
  try {
    for (const url of urls) {
      const auth: FunctionUrlAuth =
        url.authType === "AWS_IAM" ? { type: "AWS_IAM", ...iam } : { type: "NONE" };
      const server = await startFunctionUrl(
        (event, responseStream) => lambda.invokeStream(url.functionArn, event, responseStream),
        0,
        auth,
      );
      servers.push(server);
      running.push({
        logicalId: url.logicalId,
        url: `${server.url}/`,
        functionArn: url.functionArn,
        authType: url.authType,
      });
    }
  } catch (error) {
    await close();
    throw error;
  }
  return { running, close };
}
