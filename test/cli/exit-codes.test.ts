import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { Exit, STATUS_EXIT } from "../../cli/exit-codes.ts";
import { RolloutPhaseSchema } from "../../functions/store/schema.ts";

/** Every TypeScript file of the CLI and the entry points that end a process. */
function sources(): Array<{ file: string; text: string }> {
  const files = ["bin/rollouts.mjs", "local/proxy/main.ts", "local/demo/main.ts"];
  const walk = (dir: string) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) walk(path);
      else if (path.endsWith(".ts")) files.push(path);
    }
  };
  walk("cli");
  return files.map((file) => ({ file, text: readFileSync(file, "utf8") }));
}

describe("one exit-code table", () => {
  it("has one meaning per code, and docs/cli.md documents exactly these codes", () => {
    const codes = Object.values(Exit);
    expect(new Set(codes).size).toBe(codes.length);
    const doc = readFileSync("docs/cli.md", "utf8");
    const section = doc.slice(
      doc.indexOf("## Exit codes"),
      doc.indexOf("\n## ", doc.indexOf("## Exit codes") + 1),
    );
    const documented = [...section.matchAll(/^\| (\d+) +\|/gm)].map((m) => Number(m[1]));
    expect(documented).toEqual([...codes].sort((a, b) => a - b));
  });

  it("rollouts status exits with a code of the table for every phase", () => {
    const table = new Set<number>(Object.values(Exit));
    for (const phase of RolloutPhaseSchema.options) expect(table.has(STATUS_EXIT[phase]), phase).toBe(true);
    expect(STATUS_EXIT).toEqual({
      Healthy: Exit.ok,
      Degraded: Exit.negative,
      Paused: Exit.hold,
      Progressing: Exit.progressing,
    });
  });

  it("no command, entry point or action ends with a number of its own: every code comes from the table", () => {
    const literal = /process\.exit\(\s*\d|done\(\s*\d|return\s+\d+\s*;|\b(?:OPERATE_EXIT|STATUS_EXIT)\s*=/;
    /** `process.exitCode = 1` or `= ok ? 0 : 1` (a comparison such as `exitCode === 0` is no exit). */
    const assigned = (line: string) => /exitCode\s*=(?!=)/.test(line) && /[=?:]\s*\d+\s*[:;]/.test(line);
    const offenders = sources()
      .filter(({ file }) => file !== join("cli", "exit-codes.ts"))
      .flatMap(({ file, text }) =>
        text
          .split("\n")
          .map((line, i) => ({ line, at: `${file}:${i + 1}` }))
          .filter(({ line }) => literal.test(line) || assigned(line)),
      )
      .map(({ at, line }) => `${at}: ${line.trim()}`);
    expect(offenders).toEqual([]);
  });
});
