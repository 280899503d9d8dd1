import { parseArgs } from "node:util";
import { Exit } from "../../cli/exit-codes.ts";
import { RolloutsError } from "../../statemachine/errors.ts";
import { formatIssues } from "../../statemachine/problems.ts";
import { type ProxyConfig, ProxyConfigSchema } from "./config.ts";
import { startProxy } from "./server.ts";

/** A flag or configuration the proxy cannot use: one line for stderr, exit 2. */
class ProxyFlagError extends RolloutsError {
  override readonly name = "ProxyFlagError";
}

/** A whole number from `min` to `max` written in decimal digits, or a {@link ProxyFlagError} naming the flag. */
function wholeNumber(flag: string, value: string, min: number, max: number, what: string): number {
  const n = Number(value);
  if (!/^\d+$/.test(value) || n < min || n > max) {
    throw new ProxyFlagError(`${flag} must be ${what} from ${min} to ${max}, got "${value}"`);
  }
  return n;
}

/**
 * `node --import tsx local/proxy/main.ts --port 8080 --admin-port 8079 --stable http://127.0.0.1:8081`
 * runs the proxy on its own, for the demo and for poking at it by hand; the embedded runtime and
 * the tests call `startProxy` directly. The admin API listens on 127.0.0.1 at `--admin-port`
 * (default: any free port, printed), apart from the traffic port.
 */
export async function main(argv: readonly string[]): Promise<void> {
  const { values } = parseArgs({
    args: [...argv],
    options: {
      port: { type: "string", default: "8080" },
      "admin-port": { type: "string", default: "0" },
      host: { type: "string", default: "127.0.0.1" },
      stable: { type: "string" },
      canary: { type: "string" },
      weight: { type: "string", default: "0" },
      "testers-header": { type: "string", default: "X-Canary: always" },
    },
  });
  const port = wholeNumber("--port", values.port, 0, 65_535, "a port number");
  const adminPort = wholeNumber("--admin-port", values["admin-port"], 0, 65_535, "a port number");
  const weight = wholeNumber("--weight", values.weight, 0, 100, "a whole number");
  let config: ProxyConfig | undefined;
  if (values.stable === undefined) {
    if (weight !== 0 || values.canary !== undefined) {
      throw new ProxyFlagError(
        `${weight !== 0 ? "--weight" : "--canary"} needs --stable (and --canary): without --stable the proxy starts unconfigured`,
      );
    }
  } else {
    const parsed = ProxyConfigSchema.safeParse({
      stable: values.stable,
      canary: values.canary ?? null,
      weight,
    });
    if (!parsed.success) {
      throw new ProxyFlagError(
        `proxy configuration (--stable, --canary, --weight): ${formatIssues(parsed.error)}`,
      );
    }
    config = parsed.data;
  }
  const [name, ...rest] = values["testers-header"].split(":");
  const proxy = await startProxy({
    port,
    adminPort,
    host: values.host,
    testersHeader: { name: (name ?? "X-Canary").trim(), value: rest.join(":").trim() },
    ...(config ? { config } : {}),
  });
  process.stdout.write(`proxy listening on ${proxy.url} (admin: ${proxy.adminUrl}/admin/config)\n`);
  const stop = () => {
    proxy.close().finally(() => process.exit(Exit.ok));
  };
  process.once("SIGINT", stop);
  process.once("SIGTERM", stop);
}

if (import.meta.url === `file://${process.argv[1]}`) {
  main(process.argv.slice(2)).catch((err: unknown) => {
    // One line: a flag's own message, else the error's (a port in use, an unknown option).
    const message = err instanceof Error ? err.message : String(err);
    process.stderr.write(`${message.replace(/\s*\n\s*/g, " ")}\n`);
    // A port in use, a bad URL or option: what it was given cannot be used.
    process.exit(Exit.badInput);
  });
}
