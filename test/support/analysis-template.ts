import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { loadAnalysisTemplates } from "../../statemachine/load.ts";
import type { AnalysisSpec } from "../../statemachine/spec.ts";

/** AnalysisTemplates written as YAML, loaded as `rollouts analyze` loads them (a file on disk). */
export async function loadTemplateText(
  yaml: string,
  args: Record<string, string> = {},
): Promise<AnalysisSpec> {
  const dir = await mkdtemp(join(tmpdir(), "template-"));
  try {
    const file = join(dir, "template.yaml");
    await writeFile(file, yaml);
    return await loadAnalysisTemplates([file], args);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** The problems loading the YAML reports (each `file: path: message`), or [] when it loads. */
export async function templateProblems(yaml: string): Promise<string[]> {
  try {
    await loadTemplateText(yaml);
    return [];
  } catch (error) {
    const problems = (error as { problems?: Array<{ path?: string; message: string }> }).problems;
    if (!problems) throw error;
    return problems.map((p) => `${p.path ?? ""}: ${p.message}`);
  }
}
