import { execFileSync } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import { expect, it } from "vitest";

/** Every file under `dir`, as paths relative to it. */
function files(dir: string): string[] {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile())
    .map((entry) => relative(dir, join(entry.parentPath, entry.name)))
    .sort();
}

/**
 * `docs/api/` is generated from the TSDoc of the package's entry points (`typedoc.json`): a prop
 * documented in the sources and not in the reference, or a reference describing a prop that has
 * gone, fails here. `npm run docs:api` regenerates it.
 */
it("docs/api is what `npm run docs:api` generates from the sources", () => {
  const out = mkdtempSync(join(tmpdir(), "api-docs-"));
  execFileSync(process.execPath, ["node_modules/typedoc/bin/typedoc", "--out", out, "--logLevel", "Warn"], {
    stdio: ["ignore", "pipe", "pipe"],
  });
  const generated = files(out);
  expect(files("docs/api"), "run `npm run docs:api`").toEqual(generated);
  for (const file of generated) {
    expect(readFileSync(join("docs/api", file), "utf8"), `docs/api/${file}: run \`npm run docs:api\``).toBe(
      readFileSync(join(out, file), "utf8"),
    );
  }
}, 900_000);
