/**
 * moto's server (`moto_server`, a Python program: `pip install 'moto[server]'`) as the AWS peer of
 * the adapter tests in `test/aws/`: the real adapters drive real SDK clients against it, and the
 * tests read moto's resulting state back through the SDK. One server per test file, on 127.0.0.1
 * at a port the system picks (`-p 0`; the port is read from what the server prints), emptied
 * between tests (`POST /moto-api/reset`), stopped on close. Absent, it is an error naming how to
 * install it (`npm run test:all`'s preflight installs it).
 *
 * What moto does not do as AWS does is listed in `docs/runtime.md` ("The AWS peer: moto").
 */
import { type ChildProcess, spawn } from "node:child_process";

export const MOTO_INSTALL = "python3 -m pip install --user 'moto[server]'";

/** The region and the fake credentials every client of a moto test uses. */
export const MOTO_REGION = "eu-west-1";
/** moto's default account: the one its ARNs name. */
export const MOTO_ACCOUNT = "123456789012";

/** What an SDK client's constructor needs to speak to moto (spread it into the constructor). */
export interface MotoClientConfig {
  readonly endpoint: string;
  readonly region: string;
  readonly credentials: { readonly accessKeyId: string; readonly secretAccessKey: string };
  readonly maxAttempts: number;
}

export interface Moto {
  /** `http://127.0.0.1:PORT`. */
  readonly endpoint: string;
  readonly config: MotoClientConfig;
  /** Forgets every resource (moto's `/moto-api/reset`): each test starts from an empty account. */
  reset(): Promise<void>;
  close(): Promise<void>;
}

/** `* Running on http://127.0.0.1:37067` (werkzeug's line once it listens). */
const LISTENING = /Running on (http:\/\/127\.0\.0\.1:(\d+))/;

/** Starts `moto_server` on 127.0.0.1, port 0, and resolves once it answers. */
export async function startMoto(): Promise<Moto> {
  const child: ChildProcess = spawn("moto_server", ["-H", "127.0.0.1", "-p", "0"], {
    stdio: ["ignore", "pipe", "pipe"],
    env: { ...process.env, PYTHONUNBUFFERED: "1" },
  });
  let log = "";
  let listening = false;
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  const endpoint = await new Promise<string>((resolve, reject) => {
    // It logs every request afterwards: kept until it listens (for an error), then only drained.
    const read = (chunk: Buffer) => {
      if (listening) return;
      log += chunk.toString("utf8");
      const match = LISTENING.exec(log);
      if (match) {
        listening = true;
        resolve(match[1] as string);
      }
    };
    child.stdout?.on("data", read);
    child.stderr?.on("data", read);
    child.once("error", (error) =>
      reject(new Error(`moto_server does not run (${error.message}): ${MOTO_INSTALL}`, { cause: error })),
    );
    void exited.then((code) =>
      reject(new Error(`moto_server exited with ${code} before it listened: ${log.slice(-2000)}`)),
    );
  });
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill("SIGTERM");
      await exited;
    }
  };
  try {
    // It prints the line as it binds; the first answer says it serves.
    const ready = await fetch(`${endpoint}/moto-api/data.json`);
    if (!ready.ok) throw new Error(`moto_server answered ${ready.status} at ${endpoint}/moto-api/data.json`);
    await ready.arrayBuffer();
  } catch (error) {
    await stop();
    throw error;
  }
  return {
    endpoint,
    config: {
      endpoint,
      region: MOTO_REGION,
      credentials: { accessKeyId: "testing", secretAccessKey: "testing" },
      maxAttempts: 1,
    },
    reset: async () => {
      const out = await fetch(`${endpoint}/moto-api/reset`, { method: "POST" });
      await out.arrayBuffer();
      if (!out.ok) throw new Error(`moto_server's reset answered ${out.status}`);
    },
    close: stop,
  };
}

/**
 * A call to a service the project has no SDK client for (IAM, Secrets Manager's writes), in the
 * service's own protocol. moto does not check signatures: the `Authorization` header only names the
 * service and region (its credential scope), as moto routes a request on 127.0.0.1 by it.
 */
export async function motoCall(
  moto: Moto,
  service: string,
  request:
    | { target: string; body: unknown; json?: "1.0" | "1.1" }
    | { action: string; version: string; params: Record<string, string> },
): Promise<unknown> {
  const scope = `Credential=testing/20260101/${MOTO_REGION}/${service}/aws4_request`;
  const authorization = `AWS4-HMAC-SHA256 ${scope}, SignedHeaders=host, Signature=0`;
  const init: RequestInit =
    "target" in request
      ? {
          method: "POST",
          headers: {
            authorization,
            "content-type": `application/x-amz-json-${request.json ?? "1.1"}`,
            "x-amz-target": request.target,
          },
          body: JSON.stringify(request.body),
        }
      : {
          method: "POST",
          headers: { authorization, "content-type": "application/x-www-form-urlencoded" },
          body: new URLSearchParams({
            Action: request.action,
            Version: request.version,
            ...request.params,
          }).toString(),
        };
  const out = await fetch(`${moto.endpoint}/`, init);
  const text = await out.text();
  const name = "target" in request ? request.target : request.action;
  if (!out.ok) throw new Error(`moto refused ${service} ${name} (${out.status}): ${text.slice(0, 500)}`);
  return "target" in request && text ? JSON.parse(text) : text;
}

/** A VPC with two subnets in two zones (an ALB needs two), through EC2's query protocol: `{vpcId, subnetIds}`. */
export async function createVpc(moto: Moto): Promise<{ vpcId: string; subnetIds: string[] }> {
  const ec2 = (action: string, params: Record<string, string>) =>
    motoCall(moto, "ec2", { action, version: "2016-11-15", params }) as Promise<string>;
  const vpc = await ec2("CreateVpc", { CidrBlock: "10.0.0.0/16" });
  const vpcId = /<vpcId>([^<]+)<\/vpcId>/.exec(vpc)?.[1];
  if (!vpcId) throw new Error(`CreateVpc gave no vpcId: ${vpc.slice(0, 300)}`);
  const subnetIds: string[] = [];
  for (const [i, zone] of ["a", "b"].entries()) {
    const subnet = await ec2("CreateSubnet", {
      VpcId: vpcId,
      CidrBlock: `10.0.${i}.0/24`,
      AvailabilityZone: `${MOTO_REGION}${zone}`,
    });
    const id = /<subnetId>([^<]+)<\/subnetId>/.exec(subnet)?.[1];
    if (!id) throw new Error(`CreateSubnet gave no subnetId: ${subnet.slice(0, 300)}`);
    subnetIds.push(id);
  }
  return { vpcId, subnetIds };
}

/** A role Lambda may assume, as moto's CreateFunction looks its ARN up in IAM. */
export async function createLambdaRole(moto: Moto, name = "rollouts-test"): Promise<string> {
  await motoCall(moto, "iam", {
    action: "CreateRole",
    version: "2010-05-08",
    params: {
      RoleName: name,
      AssumeRolePolicyDocument: JSON.stringify({
        Version: "2012-10-17",
        Statement: [
          { Effect: "Allow", Principal: { Service: "lambda.amazonaws.com" }, Action: "sts:AssumeRole" },
        ],
      }),
    },
  });
  return `arn:aws:iam::${MOTO_ACCOUNT}:role/${name}`;
}
