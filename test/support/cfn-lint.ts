/**
 * AWS's CloudFormation linter (`cfn-lint`, a Python program) on synthesized templates: what
 * CloudFormation and the services would refuse, or warn of, before anyone deploys. One process
 * lints every file (it takes seconds to start). Absent, it is an error naming how to install it.
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

/** One finding: the template's name, the rule, where in the template, what cfn-lint says. */
export interface LintFinding {
  readonly template: string;
  readonly rule: string;
  readonly level: string;
  readonly path: string;
  readonly message: string;
}

export const CFN_LINT_INSTALL = "pip install cfn-lint";

interface RawFinding {
  Filename: string;
  Level: string;
  Location: { Path: (string | number)[] | null };
  Message: string;
  Rule: { Id: string };
}

/** The version of the `cfn-lint` on the PATH (`cfn-lint 1.51.0`), or an error naming how to install it. */
export function cfnLintVersion(): string {
  const out = spawnSync("cfn-lint", ["--version"], { encoding: "utf8" });
  const match = /cfn-lint (\d+)\.(\d+)/.exec(`${out.stdout ?? ""}`);
  if (out.error || out.status !== 0 || !match) {
    throw new Error(
      `cfn-lint is not installed or does not run (${out.error?.message ?? out.stderr?.trim() ?? `exit ${out.status}`}): ${CFN_LINT_INSTALL} (npm run test:all's preflight installs it)`,
    );
  }
  if (Number(match[1]) < 1)
    throw new Error(`cfn-lint ${match[0]} is too old (1.x needed): ${CFN_LINT_INSTALL} --upgrade`);
  return match[0];
}

/** Lints each template (name → template JSON) in one cfn-lint process; every finding, by template name. */
export function cfnLint(templates: Readonly<Record<string, unknown>>): LintFinding[] {
  cfnLintVersion();
  const dir = mkdtempSync(join(tmpdir(), "cfn-lint-"));
  const names = new Map<string, string>();
  for (const [i, [name, template]] of Object.entries(templates).entries()) {
    const file = join(dir, `${i}.json`);
    writeFileSync(file, JSON.stringify(template, null, 1));
    names.set(file, name);
  }
  const run = spawnSync("cfn-lint", ["--format", "json", "--", ...names.keys()], {
    encoding: "utf8",
    maxBuffer: 64 * 1024 * 1024,
  });
  // Exit codes are a bit mask of the levels found (2 errors, 4 warnings, 8 informational); 1 is
  // cfn-lint failing itself (a template it cannot read).
  if (run.error || run.status === null || (run.status & 1) === 1) {
    throw new Error(`cfn-lint failed (exit ${run.status}): ${run.error?.message ?? run.stderr}`);
  }
  const raw = JSON.parse(run.stdout || "[]") as RawFinding[];
  return raw.map((f) => ({
    template: names.get(f.Filename) ?? f.Filename,
    rule: f.Rule.Id,
    level: f.Level,
    path: (f.Location.Path ?? []).join("/"),
    message: f.Message,
  }));
}
