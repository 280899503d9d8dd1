import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startServer } from "@sfn-rollouts/test-support/http-server";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse } from "yaml";
import { type LocalDynamo, startDynamo } from "../../local/dynamo.ts";
import { type LocalScenario, startScenario } from "./harness.ts";
import { DIGESTS, done } from "./scenario.ts";

const FIXTURES = new URL("../fixtures/argo-examples/notifications/", import.meta.url);
const CHANNEL = "argoproj-deployments-notifications";

/** The subscriptions of Argo's example Rollout, exactly as it writes them. */
const exampleAnnotations = (): Record<string, string> => {
  const docs = readFileSync(new URL("rollout-canary.yaml", FIXTURES), "utf8")
    .split(/^---$/m)
    .map((d) => parse(d) as { kind?: string; metadata?: { annotations?: Record<string, string> } });
  return docs.find((d) => d.kind === "Rollout")?.metadata?.annotations ?? {};
};

/**
 * Argo's notification example (examples/notifications: its Rollout's five subscriptions and its
 * ConfigMap with the custom trigger on-purple) on the synthesized stack: the built-in triggers reach
 * a local HTTP server acting as the Slack webhook; on-purple's `when` reads the pushed image, which
 * is never Argo's purple demo image, so it stays silent; a custom trigger whose `when` holds for v2
 * (a second ConfigMap's key, as a kustomize patch adds one) is delivered with its template.
 */
describe("Argo's notification example in the embedded runtime", () => {
  let dynamo: LocalDynamo;
  let scenario: LocalScenario | undefined;
  let slack: Awaited<ReturnType<typeof startServer>>;

  beforeAll(async () => {
    dynamo = await startDynamo("dynalite");
    slack = await startServer((_req, res) => {
      res.writeHead(200, { "content-type": "text/plain" });
      res.end("ok");
    });
  });
  afterAll(async () => {
    await scenario?.close().catch(() => undefined);
    await slack?.close();
    await dynamo?.close();
  });

  it("delivers on-rollout-updated, on-rollout-step-completed, on-scaling-replica-set, on-rollout-completed and a custom trigger", async () => {
    const dir = mkdtempSync(join(tmpdir(), "argo-notifications-"));
    const patch = join(dir, "configmap-patch.yaml");
    writeFileSync(
      patch,
      `apiVersion: v1
kind: ConfigMap
metadata:
  name: argo-rollouts-notification-configmap
data:
  trigger.on-v2: |
    - send: [v2-template]
      when: rollout.status.currentPodHash == '${DIGESTS.v2}' && rollout.spec.strategy.canary != nil
  template.v2-template: |
    message: Rollout {{.rollout.metadata.name}} runs v2 (revision {{.rollout.revision}})
`,
    );
    const s = await startScenario({
      dynamo,
      tableName: "rollouts-argo-notify",
      annotations: { ...exampleAnnotations(), "notifications.argoproj.io/subscribe.on-v2.slack": CHANNEL },
      extraSpecFiles: [new URL("configmap.yaml", FIXTURES).pathname, patch],
      notifications: {
        services: { slack: { type: "slack", webhookUrl: `${slack.url}/services/T0/B0/x` } },
      },
    });
    scenario = s;
    const texts = () =>
      slack.requests.map((r) => {
        const body = JSON.parse(r.body) as { text: string; channel: string };
        expect(body.channel).toBe(CHANNEL);
        return body.text;
      });

    await s.push("v1");
    expect((await s.drive(done("v1")))?.phase).toBe("Healthy");
    expect(texts().sort()).toEqual([
      `Rollout ${s.name} has been completed. Rollout completed: revision 1 (v1) is stable`,
      `Rollout ${s.name} has been updated. Rollout updated to revision 1 (v1)`,
    ]);

    await s.push("v2");
    expect((await s.drive(done("v2")))?.phase).toBe("Healthy");
    expect(s.stack.runtime.bus.failures).toEqual([]);
    const v2 = texts().slice(2);
    expect(v2.filter((t) => t.includes("has been updated"))).toEqual([
      `Rollout ${s.name} has been updated. Rollout updated to revision 2 (v2)`,
    ]);
    expect(v2.filter((t) => t.startsWith("Scaling")).sort()).toEqual([
      `Scaling Rollout ${s.name}'s canary: Traffic weight updated to 25%`,
      `Scaling Rollout ${s.name}'s canary: Traffic weight updated to 50%`,
    ]);
    expect(v2.filter((t) => t.includes("step ")).sort()).toEqual([
      `Rollout ${s.name}: Rollout step 1/5 completed (weight 25%)`,
      `Rollout ${s.name}: Rollout step 3/5 completed (weight 50%)`,
    ]);
    expect(v2.filter((t) => t.includes("runs v2"))).toEqual([`Rollout ${s.name} runs v2 (revision 2)`]);
    expect(v2.filter((t) => t.includes("purple"))).toEqual([]);
    expect(v2.filter((t) => t.includes("has been completed"))).toEqual([
      `Rollout ${s.name} has been completed. Rollout completed: revision 2 (v2) is stable`,
    ]);
    expect(v2).toHaveLength(7);
  });
});
