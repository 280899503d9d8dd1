import { startServer } from "@sfn-rollouts/test-support/http-server";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type LocalDynamo, startDynamo } from "../../local/dynamo.ts";
import { type LocalScenario, startScenario } from "./harness.ts";
import { done } from "./scenario.ts";

const ABORTED =
  'RolloutAborted: Rollout aborted update to revision 3: Metric "success-rate" assessed Failed due to failed (1) > failureLimit (0)';

/**
 * Argo Notifications on the synthesized stack: the controller's EventBridge rule for
 * `on-rollout-aborted` delivers the Slack JSON its input transformer builds to a webhook, here a
 * local HTTP server, when the workflow really aborts (v3 fails its analysis).
 */
describe("notifications in the embedded runtime", () => {
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

  it("posts the Slack message of an aborted rollout to the webhook, and nothing for a promotion", async () => {
    const s = await startScenario({
      dynamo,
      tableName: "rollouts-notify",
      notifications: {
        services: { slack: { type: "slack", webhookUrl: `${slack.url}/services/T0/B0/x` } },
        subscriptions: [{ trigger: "on-rollout-aborted", service: "slack", recipients: ["#deploys"] }],
      },
    });
    scenario = s;
    await s.push("v1");
    expect((await s.drive(done("v1")))?.phase).toBe("Healthy");
    await s.push("v2");
    expect((await s.drive(done("v2")))?.phase).toBe("Healthy");
    expect(slack.requests).toEqual([]);

    await s.push("v3");
    expect(await s.drive(done("v3"))).toMatchObject({ phase: "Degraded", message: ABORTED });
    expect(s.stack.runtime.bus.failures).toEqual([]);
    expect(slack.requests).toHaveLength(1);
    const [request] = slack.requests;
    expect(request).toMatchObject({ method: "POST", url: "/services/T0/B0/x" });
    expect(request?.headers["content-type"]).toMatch(/^application\/json/);
    const text = `Rollout ${s.name} has been aborted. ${ABORTED}`;
    expect(JSON.parse(request?.body ?? "")).toEqual({
      text,
      channel: "#deploys",
      blocks: [
        { type: "section", text: { type: "mrkdwn", text } },
        {
          type: "actions",
          elements: [
            {
              type: "button",
              text: { type: "plain_text", text: "Open in Step Functions" },
              url: `https://local.console.aws.amazon.com/states/home?region=local#/statemachines/view/${s.stateMachineArn}`,
            },
          ],
        },
      ],
    });
  });
});
