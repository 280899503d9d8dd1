import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { relative } from "node:path";
import { expect } from "vitest";

/** True when the tests run in CI (`CI` set to anything but `false` or `0`, as CI services do). */
export function inCi(env: NodeJS.ProcessEnv = process.env): boolean {
  const ci = env.CI;
  return ci !== undefined && ci !== "" && ci !== "false" && ci !== "0";
}

/**
 * Compares `text` with the reviewed golden file at `path`. `UPDATE_GOLDEN=1` rewrites the file
 * first (then review the diff); a missing file is written too, so a new case starts from its
 * output. In CI neither is allowed: a golden file compared with what was just written would
 * always pass, so a missing file (or `UPDATE_GOLDEN`) fails and says how to create it.
 */
export function expectGolden(path: string, text: string, env: NodeJS.ProcessEnv = process.env): void {
  const update = env.UPDATE_GOLDEN === "1";
  const missing = !existsSync(path);
  if ((update || missing) && inCi(env)) {
    const testPath = expect.getState().testPath;
    const testFile = testPath ? relative(process.cwd(), testPath) : "<the test file>";
    throw new Error(
      update
        ? `UPDATE_GOLDEN=1 is refused in CI: golden files are written and reviewed locally (${path})`
        : `golden file ${path} is missing: create it with \`UPDATE_GOLDEN=1 npx vitest run ${testFile}\`, review it and commit it`,
    );
  }
  if (update || missing) writeFileSync(path, text);
  expect(text, `output differs from the reviewed golden file ${path} (UPDATE_GOLDEN=1 rewrites it)`).toBe(
    readFileSync(path, "utf8"),
  );
}
