import { spawnSync } from "node:child_process";
import { chmodSync, mkdtempSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";

const PREFLIGHT = new URL("../../scripts/preflight.mjs", import.meta.url).pathname;

/** A PATH holding only node and the given fake commands (name → what it prints). */
function pathWith(commands: Record<string, string>): string {
  const dir = mkdtempSync(join(tmpdir(), "preflight-"));
  symlinkSync(process.execPath, join(dir, "node"));
  for (const [name, prints] of Object.entries(commands)) {
    writeFileSync(join(dir, name), `#!/bin/sh\necho '${prints}' >&2\n`);
    chmodSync(join(dir, name), 0o755);
  }
  return dir;
}

function preflight(path: string) {
  return spawnSync(process.execPath, [PREFLIGHT], { env: { PATH: path }, encoding: "utf8" });
}

const CHROMIUM = "Chromium 156.0.8078.114 built on Debian GNU/Linux 12 (bookworm)";

describe("npm run test:all's preflight", () => {
  it("passes when Prometheus 2+, Java 17+, Chromium 120+, kubectl, cfn-lint and moto_server are there", () => {
    const out = preflight(
      pathWith({
        prometheus: "prometheus, version 2.42.0",
        java: 'openjdk version "17.0.21" 2025-10-21',
        chromium: CHROMIUM,
        kubectl: "Client Version: v1.32.4",
        "cfn-lint": "cfn-lint 1.51.0",
        moto_server: "usage: moto_server [-h] [-H HOST] [-p PORT]",
      }),
    );
    expect(out.stderr).toBe("");
    expect(out.status).toBe(0);
  });

  it("stops at once with one line naming the command when it cannot install (no apt-get)", () => {
    const out = preflight(pathWith({}));
    expect(out.status).toBe(1);
    const lines = out.stderr.trim().split("\n");
    expect(lines).toHaveLength(1);
    expect(lines[0]).toBe(
      "npm run test:all needs prometheus 2+, java 17+, chromium 120+ and kubectl 1+: install them (on Debian: apt-get install -y --no-install-recommends prometheus openjdk-17-jre-headless chromium kubectl), then npm run test:all again",
    );
  });

  it("counts a Java older than 17 as missing", () => {
    const out = preflight(
      pathWith({
        prometheus: "prometheus, version 2.42.0",
        java: 'openjdk version "11.0.2"',
        chromium: CHROMIUM,
        kubectl: "Client Version: v1.32.4",
        "cfn-lint": "cfn-lint 1.51.0",
      }),
    );
    expect(out.status).toBe(1);
    expect(out.stderr).toContain("needs java 17+:");
    expect(out.stderr).not.toContain("prometheus 2+");
  });

  it("reads Chromium's version line, and counts one older than 120 as missing", () => {
    const out = preflight(
      pathWith({
        prometheus: "prometheus, version 2.42.0",
        java: 'openjdk version "17.0.21"',
        chromium: "Chromium 99.0.4844.51 built on Debian",
        kubectl: "Client Version: v1.32.4",
        "cfn-lint": "cfn-lint 1.51.0",
      }),
    );
    expect(out.status).toBe(1);
    expect(out.stderr).toContain("needs chromium 120+:");
    expect(out.stderr).not.toContain("java");
  });

  it("asks for cfn-lint with pip's command once the Debian programs are there, when pip cannot install it", () => {
    const out = preflight(
      pathWith({
        prometheus: "prometheus, version 2.42.0",
        java: 'openjdk version "17.0.21"',
        chromium: CHROMIUM,
        kubectl: "Client Version: v1.32.4",
      }),
    );
    expect(out.status).toBe(1);
    expect(out.stderr.trim().split("\n")).toEqual([
      "preflight: installing cfn-lint with pip",
      "npm run test:all needs cfn-lint 1+ on the PATH: run `python3 -m pip install --user --upgrade cfn-lint` (or pip install cfn-lint), then npm run test:all again",
    ]);
  });

  it("asks for moto's server with pip's command once the rest is there, when pip cannot install it", () => {
    const out = preflight(
      pathWith({
        prometheus: "prometheus, version 2.42.0",
        java: 'openjdk version "17.0.21"',
        chromium: CHROMIUM,
        kubectl: "Client Version: v1.32.4",
        "cfn-lint": "cfn-lint 1.51.0",
      }),
    );
    expect(out.status).toBe(1);
    expect(out.stderr.trim().split("\n")).toEqual([
      "preflight: installing moto[server] with pip",
      "npm run test:all needs moto_server on the PATH: run `python3 -m pip install --user 'moto[server]'`, then npm run test:all again",
    ]);
  });
});
