import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { RolloutsError } from "../statemachine/errors.ts";

/** A Prometheus server this process started, on 127.0.0.1 with its own temporary storage. */
export interface RunningPrometheus {
  url: string;
  version: string;
  /**
   * Resolves once every target has been scraped successfully. Prometheus applies its targets up
   * to five seconds after it is ready, and a rate over a series it has not scraped yet is empty.
   */
  scraped(timeoutMs?: number): Promise<void>;
  close(): Promise<void>;
}

/** Every target's last scrape succeeded (`/api/v1/targets`, health `up`). */
async function allUp(url: string): Promise<boolean> {
  const body = await fetch(`${url}/api/v1/targets?state=active`)
    .then((r) => (r.ok ? r.json() : undefined))
    .catch(() => undefined);
  const targets = (body as { data?: { activeTargets?: Array<{ health?: string }> } } | undefined)?.data
    ?.activeTargets;
  return Array.isArray(targets) && targets.length > 0 && targets.every((t) => t.health === "up");
}

/** The installed `prometheus` binary's version, or undefined when there is none. */
export function prometheusVersion(binary = "prometheus"): string | undefined {
  const out = spawnSync(binary, ["--version"], { encoding: "utf8" });
  if (out.error || out.status !== 0) return undefined;
  return /version (\S+)/.exec(`${out.stdout}${out.stderr}`)?.[1] ?? "unknown";
}

/** A free TCP port on 127.0.0.1. */
export async function freePort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((resolve) => s.listen(0, "127.0.0.1", resolve));
  const { port } = s.address() as AddressInfo;
  await new Promise<void>((resolve) => s.close(() => resolve()));
  return port;
}

/**
 * Starts Prometheus scraping `targets` (`host:port`) every `scrapeSeconds`, and resolves once it
 * answers queries. Nothing starts Prometheus on this kind of machine by itself, so the demo,
 * `rollouts simulate` and the tests run their own and stop it (and remove its storage) on `close`.
 */
export async function startPrometheus(options: {
  targets: string[];
  scrapeSeconds?: number;
  binary?: string;
  readyTimeoutMs?: number;
  /** More flags, e.g. `--web.enable-remote-write-receiver` for a Prometheus fed by remote write. */
  extraArgs?: string[];
  /** Where each attempt listens (default a free port); tests give a taken one first. */
  port?: () => Promise<number>;
}): Promise<RunningPrometheus> {
  const binary = options.binary ?? "prometheus";
  const version = prometheusVersion(binary);
  if (!version) {
    throw new Error(`no ${binary} binary: apt-get install -y --no-install-recommends prometheus`);
  }
  const scrape = `${options.scrapeSeconds ?? 1}s`;
  const dir = mkdtempSync(join(tmpdir(), "sfn-rollouts-prometheus-"));
  writeFileSync(
    join(dir, "prometheus.yml"),
    [
      "global:",
      `  scrape_interval: ${scrape}`,
      `  scrape_timeout: ${scrape}`,
      `  evaluation_interval: ${scrape}`,
      "scrape_configs:",
      "  - job_name: rollouts",
      "    static_configs:",
      `      - targets: [${options.targets.map((t) => JSON.stringify(t)).join(", ")}]`,
      "",
    ].join("\n"),
  );
  // A port found free may be taken by another process before Prometheus binds it: try another.
  for (let attempt = 1; ; attempt++) {
    const port = await (options.port ?? freePort)();
    try {
      return await launch(binary, dir, port, version, options);
    } catch (error) {
      if (!(error instanceof PortTakenError) || attempt === PORT_ATTEMPTS) {
        rmSync(dir, { recursive: true, force: true });
        throw error;
      }
    }
  }
}

/** How many ports `startPrometheus` tries before it gives up. */
const PORT_ATTEMPTS = 3;

/** Prometheus exited because its port was taken (`bind: address already in use`). */
class PortTakenError extends RolloutsError {
  override readonly name = "PortTakenError";
}

async function launch(
  binary: string,
  dir: string,
  port: number,
  version: string,
  options: { readyTimeoutMs?: number; extraArgs?: string[] },
): Promise<RunningPrometheus> {
  const url = `http://127.0.0.1:${port}`;
  let log = "";
  const child: ChildProcess = spawn(
    binary,
    [
      `--config.file=${join(dir, "prometheus.yml")}`,
      `--storage.tsdb.path=${join(dir, "data")}`,
      `--web.listen-address=127.0.0.1:${port}`,
      "--log.level=warn",
      ...(options.extraArgs ?? []),
    ],
    { stdio: ["ignore", "pipe", "pipe"] },
  );
  child.stdout?.on("data", (d) => {
    log += String(d);
  });
  child.stderr?.on("data", (d) => {
    log += String(d);
  });
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  // After the exit, once its output is read to the end.
  const closed = new Promise<void>((resolve) => child.once("close", () => resolve()));
  const close = async () => {
    if (child.exitCode === null) {
      child.kill("SIGTERM");
      const timer = setTimeout(() => child.kill("SIGKILL"), 5_000);
      await exited;
      clearTimeout(timer);
    }
    rmSync(dir, { recursive: true, force: true });
  };
  const until = Date.now() + (options.readyTimeoutMs ?? 30_000);
  for (;;) {
    if (child.exitCode !== null) {
      await closed;
      if (/address already in use/.test(log))
        throw new PortTakenError(`port ${port} is taken: ${log.slice(-500)}`);
      await close();
      throw new Error(`prometheus exited with ${child.exitCode}: ${log.slice(-2000)}`);
    }
    const ready = await fetch(`${url}/-/ready`).then(
      (r) => r.ok,
      () => false,
    );
    if (ready) break;
    if (Date.now() > until) {
      await close();
      throw new Error(`prometheus did not become ready: ${log.slice(-2000)}`);
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  const scraped = async (timeoutMs = 30_000) => {
    const deadline = Date.now() + timeoutMs;
    while (!(await allUp(url))) {
      if (Date.now() > deadline) throw new Error(`prometheus did not scrape its targets in ${timeoutMs} ms`);
      await new Promise((r) => setTimeout(r, 100));
    }
  };
  return { url, version, scraped, close };
}
