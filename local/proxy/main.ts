import { parseArgs } from "node:util";
import { Exit } from "../../cli/exit-codes.ts";
import { startProxy } from "./server.ts";

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
  const [name, ...rest] = (values["testers-header"] ?? "X-Canary: always").split(":");
  const proxy = await startProxy({
    port: Number(values.port),
    adminPort: Number(values["admin-port"]),
    host: values.host,
    testersHeader: { name: (name ?? "X-Canary").trim(), value: rest.join(":").trim() },
    ...(values.stable
      ? { config: { stable: values.stable, canary: values.canary ?? null, weight: Number(values.weight) } }
      : {}),
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
    process.stderr.write(`${String(err)}\n`);
    // A port in use, a bad URL or option: what it was given cannot be used.
    process.exit(Exit.badInput);
  });
}
