import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";

/**
 * The CDK app the docs show is `examples/cdk-app.ts`, which `npm run typecheck` compiles: each
 * doc must show that file as it is, so a prop renamed in the construct breaks the type check
 * instead of leaving the docs wrong.
 */
const example = readFileSync("examples/cdk-app.ts", "utf8");

/** The first ```ts block after `heading`. */
function codeBlockAfter(file: string, heading: string): string {
  const text = readFileSync(file, "utf8");
  const at = text.indexOf(`\n${heading}\n`);
  if (at < 0) throw new Error(`${file}: no heading "${heading}"`);
  const start = text.indexOf("```ts\n", at);
  if (start < 0) throw new Error(`${file}: no ts block after "${heading}"`);
  const body = start + "```ts\n".length;
  return text.slice(body, text.indexOf("```\n", body));
}

describe("the target plugin in the docs", () => {
  it("docs/traffic.md shows examples/target-plugin.ts exactly", () => {
    expect(codeBlockAfter("docs/traffic.md", "### Writing a plugin")).toBe(
      readFileSync("examples/target-plugin.ts", "utf8"),
    );
  });
});

describe("the CDK example in the docs", () => {
  it.each([
    ["README.md", "### The construct"],
    ["docs/cdk.md", "## A minimal app"],
  ])("%s shows examples/cdk-app.ts exactly", (file, heading) => {
    expect(codeBlockAfter(file, heading)).toBe(example);
  });
});
