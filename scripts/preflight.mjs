#!/usr/bin/env node
// `npm run test:all`'s first step: the system programs the tests start (Prometheus for the PromQL
// provider and the demo, Java 17 for DynamoDB Local, Chromium for the dashboard's browser tests,
// driven by puppeteer-core, which downloads no browser of its own, kubectl against the local
// Kubernetes API, AWS's cfn-lint on the synthesized templates, and moto's server as the adapters'
// AWS peer) are there, or are installed now when this machine can (root with apt-get, as on
// Debian), or the run stops at once with one line naming the command to run (cfn-lint and moto,
// Python programs, come from pip instead). Plain JavaScript: it
// runs before anything is type-checked.
import { spawnSync } from "node:child_process";

/** The `version 2.42.0` / `version "17.0.2"` most programs print. */
const VERSION = /version "?(\d+)/;

/** What the tests need: the command, how its version is read, the minimum, the Debian package. */
const NEEDS = [
  { command: "prometheus", args: ["--version"], minimum: 2, pkg: "prometheus" },
  { command: "java", args: ["-version"], minimum: 17, pkg: "openjdk-17-jre-headless" },
  // `Chromium 156.0.8078.114 built on Debian ...`; puppeteer-core speaks to recent ones.
  { command: "chromium", args: ["--version"], minimum: 120, pkg: "chromium", pattern: /Chromium (\d+)/ },
  // `Client Version: v1.32.4`.
  {
    command: "kubectl",
    args: ["version", "--client"],
    minimum: 1,
    pkg: "kubectl",
    pattern: /Client Version: v?(\d+)/,
  },
];

/** The major version a command prints, 0 when it runs but prints none, undefined when it is absent. */
function majorVersion({ command, args, pattern = VERSION }) {
  const out = spawnSync(command, args, { encoding: "utf8" });
  if (out.error || out.status !== 0) return undefined;
  const match = pattern.exec(`${out.stdout}\n${out.stderr}`);
  return match ? Number(match[1]) : 0;
}

function missing() {
  return NEEDS.filter((need) => (majorVersion(need) ?? -1) < need.minimum);
}

const absent = missing();
if (absent.length > 0) {
  const names = absent.map((n) => n.pkg);
  const install = `apt-get install -y --no-install-recommends ${names.join(" ")}`;
  const hasApt = spawnSync("apt-get", ["--version"]).status === 0;
  const root = typeof process.getuid === "function" && process.getuid() === 0;
  if (!hasApt || !root) {
    const listed = absent.map((n) => `${n.command} ${n.minimum}+`);
    const needs =
      listed.length > 1 ? `${listed.slice(0, -1).join(", ")} and ${listed.at(-1)}` : listed.join("");
    const how = hasApt
      ? `run \`sudo apt-get update && sudo ${install}\``
      : `install them (on Debian: ${install})`;
    console.error(`npm run test:all needs ${needs}: ${how}, then npm run test:all again`);
    process.exit(1);
  }
  console.error(`preflight: installing ${names.join(", ")} with apt-get`);
  const env = { ...process.env, DEBIAN_FRONTEND: "noninteractive" };
  for (const args of [
    ["update", "-qq"],
    ["install", "-y", "-qq", "--no-install-recommends", ...names],
  ]) {
    const run = spawnSync("apt-get", args, { stdio: "inherit", env });
    if (run.status !== 0) {
      console.error(`preflight: apt-get ${args[0]} failed (exit ${run.status}); run \`${install}\` by hand`);
      process.exit(1);
    }
  }
  const still = missing();
  if (still.length > 0) {
    console.error(`preflight: still missing after apt-get: ${still.map((n) => n.command).join(", ")}`);
    process.exit(1);
  }
}

/** AWS's CloudFormation linter: `cfn-lint 1.51.0`; pip installs it for this user. */
const CFN_LINT = { command: "cfn-lint", args: ["--version"], minimum: 1, pattern: /cfn-lint (\d+)/ };

if ((majorVersion(CFN_LINT) ?? -1) < CFN_LINT.minimum) {
  const install = "python3 -m pip install --user --upgrade cfn-lint";
  console.error("preflight: installing cfn-lint with pip");
  const run = spawnSync("python3", ["-m", "pip", "install", "--user", "--upgrade", "-q", "cfn-lint"], {
    stdio: "inherit",
  });
  if (run.status !== 0 || (majorVersion(CFN_LINT) ?? -1) < CFN_LINT.minimum) {
    console.error(
      `npm run test:all needs cfn-lint ${CFN_LINT.minimum}+ on the PATH: run \`${install}\` (or pip install cfn-lint), then npm run test:all again`,
    );
    process.exit(1);
  }
}

/**
 * moto's server, the AWS peer of the adapter tests (`test/aws/`). It prints no version: it is
 * there when `moto_server --help` runs (0 for "runs, no version read").
 */
const MOTO = { command: "moto_server", args: ["--help"], minimum: 0 };

if ((majorVersion(MOTO) ?? -1) < MOTO.minimum) {
  const install = "python3 -m pip install --user 'moto[server]'";
  console.error("preflight: installing moto[server] with pip");
  const run = spawnSync("python3", ["-m", "pip", "install", "--user", "-q", "moto[server]"], {
    stdio: "inherit",
  });
  if (run.status !== 0 || (majorVersion(MOTO) ?? -1) < MOTO.minimum) {
    console.error(
      `npm run test:all needs moto_server on the PATH: run \`${install}\`, then npm run test:all again`,
    );
    process.exit(1);
  }
}
