import { existsSync, mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { App, Stack } from "aws-cdk-lib";
import { describe, expect, it } from "vitest";
import { HANDLERS } from "../../functions/config.ts";
import { RolloutController } from "../../infra/index.ts";

describe("bundling", () => {
  it("bundles every handler with the local esbuild (no Docker) into an ESM asset per function", () => {
    const outdir = mkdtempSync(join(tmpdir(), "cdk-bundle-"));
    const app = new App({ outdir, builtinCloudFormationValidation: false });
    const stack = new Stack(app, "Bundled");
    new RolloutController(stack, "Controller");
    const template = app.synth().getStackByName("Bundled").template as {
      Resources: Record<string, { Type: string; Properties: { Code?: { S3Key?: string } } }>;
    };
    const keys = Object.values(template.Resources)
      .filter((r) => r.Type === "AWS::Lambda::Function")
      .map((r) => r.Properties.Code?.S3Key ?? "");
    expect(keys).toHaveLength(Object.keys(HANDLERS).length);
    for (const key of keys) {
      const dir = join(outdir, `asset.${key.replace(/\.zip$/, "")}`);
      const entry = join(dir, "index.mjs");
      expect(existsSync(entry), entry).toBe(true);
      const code = readFileSync(entry, "utf8");
      // ESM with the createRequire banner, exporting the Lambda handler; a source map beside it.
      expect(code.startsWith("import { createRequire as __cr }")).toBe(true);
      expect(code).toMatch(/export\s*\{[^}]*as handler[^}]*\}|export\s*\{\s*handler\s*\}/);
      expect(existsSync(`${entry}.map`)).toBe(true);
    }
    // The kubernetes target (its REST client and EKS token) is bundled into the functions that move traffic.
    const withKubernetes = keys.filter((key) =>
      readFileSync(join(outdir, `asset.${key.replace(/\.zip$/, "")}`, "index.mjs"), "utf8").includes(
        "k8s-aws-v1.",
      ),
    );
    expect(withKubernetes.length).toBeGreaterThanOrEqual(6);
    // One distinct bundle per handler.
    expect(new Set(keys).size).toBe(keys.length);
  });
});
