import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { run } from "@sfn-rollouts/test-support/cli";
import { describe, expect, it } from "vitest";
import { deriveName, SCHEDULE_NAME_MAX } from "../../functions/timer/names.ts";
import { EXECUTION_NAME_MAX, executionName } from "../../functions/trigger/decide.ts";
import { parseRollout, RolloutSpecSchema, SpecError } from "../../statemachine/index.ts";
import { ROLLOUT_NAME_MAX, rolloutNameProblem } from "../../statemachine/names.ts";

const argo = (name: string, extra = "") => `
apiVersion: argoproj.io/v1alpha1
kind: Rollout
metadata: {name: ${JSON.stringify(name)}}
spec:
  template: {spec: {containers: [{name: app, image: "app:2"}]}}
  strategy: {canary: {steps: [{setWeight: 50}${extra}]}}
`;
const native = (name: string) => `name: ${JSON.stringify(name)}\nsteps: [50, 100]\n`;

function problemsOf(text: string): string[] {
  try {
    parseRollout([{ file: "r.yaml", text }]);
  } catch (error) {
    expect(error).toBeInstanceOf(SpecError);
    return (error as SpecError).message.split("\n");
  }
  throw new Error("expected a SpecError");
}

const BAD_NAMES = [
  ["an underscore and a bang", "My_Rollout!"],
  ["unicode", "dépôt-ünïcode"],
  ["300 characters", "a".repeat(300)],
  ["one past the limit", "a".repeat(ROLLOUT_NAME_MAX + 1)],
  ["a leading dash", "-shop"],
  ["a dot (a DNS subdomain, not a label)", "shop.prod"],
  ["a NUL byte", "shop\u0000"],
] as const;

describe("rollout names", () => {
  it("are limited to 47 characters, derived from the execution and schedule names they must fit", () => {
    expect(ROLLOUT_NAME_MAX).toBe(47);
  });

  it.each(BAD_NAMES)("an Argo metadata.name with %s is a problem at metadata.name", (_, name) => {
    const lines = problemsOf(argo(name));
    expect(lines).toEqual([
      expect.stringMatching(
        /^r\.yaml: document 1 \(Rollout .*\): metadata\.name: .* is not a rollout name: use at most 47 lower-case letters, digits and '-'/,
      ),
    ]);
  });

  it.each(BAD_NAMES)("a native name with %s is a problem at name", (_, name) => {
    expect(problemsOf(native(name))).toEqual([expect.stringContaining(": name: ")]);
  });

  it("are reported with the spec's other problems, not only once everything else is right", () => {
    const lines = problemsOf(argo("Bad_Name", ", {pause: {duration: 5 minutes}}"));
    expect(lines).toHaveLength(2);
    expect(lines.join("\n")).toContain("metadata.name");
    expect(lines.join("\n")).toContain("pause.duration");
  });

  it("a name of exactly the limit loads", () => {
    const name = `a${"-b".repeat((ROLLOUT_NAME_MAX - 1) / 2)}`;
    expect(name).toHaveLength(ROLLOUT_NAME_MAX);
    expect(parseRollout([{ file: "r.yaml", text: argo(name) }]).spec.name).toBe(name);
    expect(parseRollout([{ file: "n.yaml", text: native(name) }]).spec.name).toBe(name);
  });

  it("a RolloutSpec given directly (the construct's other input) is held to the same rule", () => {
    const spec = parseRollout([{ file: "r.yaml", text: argo("shop") }]).spec;
    expect(RolloutSpecSchema.safeParse(spec).success).toBe(true);
    const bad = RolloutSpecSchema.safeParse({ ...spec, name: "x".repeat(300) });
    expect(bad.success).toBe(false);
    expect(bad.error?.issues[0]?.message).toContain("(300 characters) is not a rollout name");
  });

  it("a name at the limit stays whole in its execution names up to generation 999,999, within 80 characters", () => {
    const name = "r".repeat(ROLLOUT_NAME_MAX);
    const execution = executionName(name, `sha256:${"f".repeat(64)}`, 999_999);
    expect(execution).toBe(`${name}-${"f".repeat(24)}-g999999`);
    expect(execution.length).toBeLessThanOrEqual(EXECUTION_NAME_MAX);
  });

  it("a name at the limit stays whole in the Timer's schedule names, within 64 characters", () => {
    const name = "r".repeat(ROLLOUT_NAME_MAX);
    const schedule = deriveName(
      `${name}/${name}-${"f".repeat(24)}-g1.step03/tick-1760000000000`,
      SCHEDULE_NAME_MAX,
    );
    expect(schedule.startsWith(`${name}-`)).toBe(true);
    expect(schedule.length).toBeLessThanOrEqual(SCHEDULE_NAME_MAX);
  });

  it("the problem shows a long name cut, with its length", () => {
    expect(rolloutNameProblem("a".repeat(300))).toMatch(/^"a{60}…" \(300 characters\) is not a rollout name/);
    expect(rolloutNameProblem("shop")).toBeUndefined();
  });

  it("rollouts plan exits 2 naming the field", async () => {
    const dir = mkdtempSync(join(tmpdir(), "names-"));
    const file = join(dir, "r.yaml");
    writeFileSync(file, argo("My_Rollout!"));
    const { code, out, err } = await run("plan", file);
    expect(code).toBe(2);
    expect(out).toBe("");
    expect(err).toContain(
      `${file}: document 1 (Rollout My_Rollout!): metadata.name: "My_Rollout!" is not a rollout name`,
    );
  });
});
