import { spawn } from "node:child_process";
import { describe, expect, it } from "vitest";

/**
 * `local/proxy/main.ts` run as a person runs it: a bad flag or configuration is one line naming
 * what is wrong, and exit 2, before anything listens.
 */
function runMain(...args: string[]): Promise<{ code: number | null; out: string; err: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ["--import", "tsx", "local/proxy/main.ts", ...args], {
      stdio: ["ignore", "pipe", "pipe"],
    });
    let out = "";
    let err = "";
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => {
      out += chunk;
    });
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => {
      err += chunk;
    });
    const timer = setTimeout(() => child.kill("SIGTERM"), 20_000);
    child.on("error", reject);
    child.on("close", (code) => {
      clearTimeout(timer);
      resolve({ code, out, err });
    });
  });
}

const STABLE = ["--stable", "http://127.0.0.1:9"];

describe("local/proxy/main.ts refuses bad flags with one line and exit 2", () => {
  it.each([
    [["--weight", "abc", ...STABLE], '--weight must be a whole number from 0 to 100, got "abc"'],
    [["--weight", "150", ...STABLE], '--weight must be a whole number from 0 to 100, got "150"'],
    [["--weight", "2.5", ...STABLE], '--weight must be a whole number from 0 to 100, got "2.5"'],
    [["--port", "abc"], '--port must be a port number from 0 to 65535, got "abc"'],
    [["--port", "70000"], '--port must be a port number from 0 to 65535, got "70000"'],
    [["--admin-port", "65536"], '--admin-port must be a port number from 0 to 65535, got "65536"'],
    [
      ["--weight", "10"],
      "--weight needs --stable (and --canary): without --stable the proxy starts unconfigured",
    ],
  ])(
    "%j",
    async (args, message) => {
      const { code, out, err } = await runMain(...args);
      expect(code).toBe(2);
      expect(out).toBe("");
      expect(err).toBe(`${message}\n`);
    },
    30_000,
  );

  it.each([
    [["--stable", "notaurl"], /^proxy configuration \(--stable, --canary, --weight\): stable: .+\n$/],
    [
      ["--weight", "10", ...STABLE],
      /^proxy configuration \(--stable, --canary, --weight\): weight: a weight above 0 needs a canary upstream\n$/,
    ],
  ])(
    "a configuration problem on one line: %j",
    async (args, pattern) => {
      const { code, err } = await runMain(...args);
      expect(code).toBe(2);
      expect(err).toMatch(pattern);
      expect(err.split("\n").length).toBe(2);
    },
    30_000,
  );
});
