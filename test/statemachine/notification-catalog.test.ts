import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { parseRollout, parseSources, SpecError } from "../../statemachine/index.ts";
import { resolveTrigger } from "../../statemachine/notification-catalog.ts";
import { customTriggersOf, firedConditions } from "../../statemachine/notification-object.ts";
import { NOTIFICATION_TRIGGERS } from "../../statemachine/notifications.ts";

const fixture = (name: string) => ({
  file: name,
  text: readFileSync(new URL(`../fixtures/argo-examples/notifications/${name}`, import.meta.url), "utf8"),
});

const configMap = (data: string) => `
apiVersion: v1
kind: ConfigMap
metadata:
  name: argo-rollouts-notification-configmap
data:
${data}
`;

function problems(texts: string[]): string[] {
  try {
    parseSources(texts.map((text, i) => ({ file: `f${i}.yaml`, text })));
  } catch (error) {
    if (error instanceof SpecError) return error.problems.map((p) => `${p.path}: ${p.message}`);
    throw error;
  }
  throw new Error("expected a SpecError");
}

describe("Argo's notification example", () => {
  it("loads: its five subscriptions, the custom trigger on-purple and its template", () => {
    const { spec, notes } = parseRollout([fixture("rollout-canary.yaml"), fixture("configmap.yaml")]);
    expect(spec.notifications?.map((s) => `${s.trigger}.${s.service}`)).toEqual([
      "on-rollout-completed.slack",
      "on-rollout-step-completed.slack",
      "on-rollout-updated.slack",
      "on-scaling-replica-set.slack",
      "on-purple.slack",
    ]);
    expect(spec.notificationCatalog).toEqual({
      triggers: {
        "on-purple": [
          {
            send: ["my-purple-template"],
            when: "rollout.spec.template.spec.containers[0].image == 'argoproj/rollouts-demo:purple'",
          },
        ],
      },
      templates: { "my-purple-template": { message: "Rollout {{.rollout.metadata.name}} has purple image" } },
    });
    // Every subscription is delivered: no warning about a trigger; what is not used is said.
    expect(notes.filter((n) => n.includes("ignored"))).toEqual([]);
    expect(notes).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/argo-rollouts-notification-configmap: data\["service\.slack"\] is not read/),
        expect.stringMatching(/data\["template\.my-purple-template"\]: slack is not sent/),
      ]),
    );
    expect(resolveTrigger("on-purple", spec.notificationCatalog)).toEqual({
      kind: "custom",
      conditions: [
        {
          when: "rollout.spec.template.spec.containers[0].image == 'argoproj/rollouts-demo:purple'",
          message: "Rollout {{.rollout.metadata.name}} has purple image",
        },
      ],
    });
  });

  it("without the ConfigMap: on-purple is unknown, a warning, and the rest still loads", () => {
    const { spec, notes } = parseRollout([fixture("rollout-canary.yaml")]);
    expect(spec.notifications).toHaveLength(5);
    expect(notes).toContain(
      'warning: rollout rollout-canary: subscription on-purple.slack is ignored: trigger "on-purple" is neither built in nor defined in the argo-rollouts-notification-configmap',
    );
  });
});

describe("the nine built-in triggers", () => {
  it("are Argo's, each on a lifecycle event", () => {
    expect(Object.keys(NOTIFICATION_TRIGGERS).sort()).toEqual([
      "on-analysis-run-error",
      "on-analysis-run-failed",
      "on-analysis-run-running",
      "on-rollout-aborted",
      "on-rollout-completed",
      "on-rollout-paused",
      "on-rollout-step-completed",
      "on-rollout-updated",
      "on-scaling-replica-set",
    ]);
  });
});

describe("the notification ConfigMap", () => {
  const rollout = readFileSync(
    new URL("../fixtures/argo-examples/notifications/rollout-canary.yaml", import.meta.url),
    "utf8",
  );

  it("names a when expr refuses, and a trigger that is not a list, at their keys", () => {
    expect(
      problems([
        rollout,
        configMap(`  trigger.on-purple: |
    - send: [t]
      when: rollout.spec ==
  trigger.on-x: "send: [t]"
  template.t: "message: hi"`),
      ]),
    ).toEqual([
      expect.stringMatching(/^data\["trigger\.on-purple"\]: \[0\]\.when: unexpected token EOF/),
      expect.stringMatching(
        /^data\["trigger\.on-x"\]: a trigger is a list of \{send: \[template\.\.\.\], when: condition\}/,
      ),
    ]);
  });

  it("refuses trigger and template names every object inherits, and resolves no trigger from them", () => {
    expect(
      problems([
        rollout,
        configMap(`  trigger.constructor: |
    - send: [t]
  trigger.__proto__: |
    - send: [t]
  template.toString: "message: hi"`),
      ]),
    ).toEqual([
      expect.stringMatching(/^data\["trigger\.constructor"\]: "constructor" is a name every object inherits/),
      expect.stringMatching(/^data\["trigger\.__proto__"\]: "__proto__" is a name every object inherits/),
      expect.stringMatching(/^data\["template\.toString"\]: "toString" is a name every object inherits/),
    ]);
    const catalog = { triggers: {}, templates: {} };
    expect(resolveTrigger("constructor", catalog)).toEqual({ kind: "unknown" });
    expect(resolveTrigger("on-rollout-aborted", catalog)).toEqual({ kind: "built-in" });
  });

  it("a message with Go template actions is not used: the default is sent, with a note (Argo's catalog loads)", () => {
    const { spec, notes } = parseRollout([
      { file: "r.yaml", text: rollout },
      {
        file: "c.yaml",
        text: configMap(`  trigger.on-rollout-step-completed: |
    - send: [rollout-step-completed]
  template.rollout-step-completed: |
    message: Rollout {{.rollout.metadata.name}} step number {{ add .rollout.status.currentStepIndex 1}} has been completed.`),
      },
    ]);
    expect(resolveTrigger("on-rollout-step-completed", spec.notificationCatalog)).toEqual({
      kind: "built-in",
    });
    expect(notes).toEqual(
      expect.arrayContaining([
        expect.stringMatching(
          /data\["template\.rollout-step-completed"\]: message not used \(\{\{add \.rollout\.status\.currentStepIndex 1\}\} is not a field.*the trigger's default message is sent/,
        ),
      ]),
    );
  });
});

describe("custom trigger conditions, evaluated on the rollout object", () => {
  const { spec } = parseRollout([fixture("rollout-canary.yaml"), fixture("configmap.yaml")]);
  const custom = customTriggersOf(spec);

  it("fire when the revision's image makes when true, and only then", () => {
    if (!custom) throw new Error("expected custom triggers");
    const revision = (image: string) => ({ revision: 2, image, digest: "sha256:ab" });
    expect(firedConditions(custom, revision("argoproj/rollouts-demo:purple"))).toEqual({
      fired: [{ trigger: "on-purple", condition: 0 }],
      errors: [],
    });
    expect(firedConditions(custom, revision("argoproj/rollouts-demo:blue"))).toEqual({
      fired: [],
      errors: [],
    });
  });

  it("read the documented fields; a when that fails to run fires nothing and says why", () => {
    const withWhen = (when: string) => ({
      rollout: custom?.rollout ?? {},
      triggers: [{ trigger: "on-x", condition: 0, when }],
    });
    const rev = { revision: 3, image: "r/app@sha256:cd", digest: "sha256:cd" };
    for (const when of [
      "rollout.metadata.name == 'rollout-canary'",
      "rollout.spec.replicas == 5",
      "rollout.spec.strategy.canary != nil",
      "rollout.status.currentPodHash == 'sha256:cd'",
      "rollout.metadata.annotations['rollout.argoproj.io/revision'] == '3'",
    ]) {
      expect(firedConditions(withWhen(when), rev).fired, when).toHaveLength(1);
    }
    expect(firedConditions(withWhen("rollout.spec.replicas / 0 > 1 && len(rollout.nope) > 0"), rev)).toEqual({
      fired: [],
      errors: [expect.stringMatching(/^trigger on-x\[0\]\.when: /)],
    });
  });
});
