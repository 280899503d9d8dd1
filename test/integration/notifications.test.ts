import { startServer } from "@sfn-rollouts/test-support/http-server";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type LocalDynamo, startDynamo } from "../../local/dynamo.ts";
import { type LocalScenario, startScenario } from "./harness.ts";
import { done } from "./scenario.ts";

/** An abort reason written to fool a channel: a mention, a disguised link, Markdown, an entity. */
const HOSTILE =
  "<!channel> <https://evil.example/login|Open in Step Functions> *bold* &lt; [x](https://evil.example)";

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
    // Slack's control characters in the message are escaped: `>` reads as text, not markup.
    const text = `Rollout ${s.name} has been aborted. ${ABORTED.replace(">", "&gt;")}`;
    expect(JSON.parse(request?.body ?? "")).toEqual({
      text,
      channel: "#deploys",
      blocks: [
        { type: "section", text: { type: "mrkdwn", text, verbatim: true } },
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

  it("escapes what a value says, so an abort reason is neither a mention nor a link in Slack or Teams", async () => {
    await scenario?.close();
    const teams = await startServer((_req, res) => {
      res.writeHead(202).end();
    });
    const received = slack.requests.length;
    try {
      const s = await startScenario({
        dynamo,
        tableName: "rollouts-notify-hostile",
        notifications: {
          services: {
            slack: { type: "slack", webhookUrl: `${slack.url}/services/T0/B0/y` },
            teams: { type: "teams", webhookUrl: `${teams.url}/workflows/x` },
          },
          // The operator's own mention stays one; the reason put in after it is text.
          templates: { "on-rollout-aborted": "<!here> *{{.rollout.name}}* aborted: {{.message}}" },
          subscriptions: [
            { trigger: "on-rollout-aborted", service: "slack" },
            { trigger: "on-rollout-aborted", service: "teams" },
          ],
        },
      });
      scenario = s;
      await s.push("v1");
      expect((await s.drive(done("v1")))?.phase).toBe("Healthy");
      await s.push("v2");
      await s.drive((i) => i?.currentRevision?.tag === "v2" && i.waitingFor !== undefined);
      expect((await s.cli("abort", s.name, "--reason", HOSTILE)).code).toBe(0);
      expect((await s.drive(done("v2")))?.phase).toBe("Degraded");
      expect(s.stack.runtime.bus.failures).toEqual([]);

      const toSlack = slack.requests.slice(received);
      expect(toSlack).toHaveLength(1);
      const slackText =
        `<!here> *${s.name}* aborted: RolloutAborted: Rollout aborted update to revision 2: ` +
        "&lt;!channel&gt; &lt;https://evil.example/login|Open in Step Functions&gt; *bold* &amp;lt; [x](https://evil.example)";
      const posted = JSON.parse(toSlack[0]?.body ?? "");
      expect(posted.text).toBe(slackText);
      expect(posted.blocks[0]).toEqual({
        type: "section",
        text: { type: "mrkdwn", text: slackText, verbatim: true },
      });

      expect(teams.requests).toHaveLength(1);
      const card = JSON.parse(teams.requests[0]?.body ?? "").attachments[0].content;
      expect(card.body).toEqual([
        {
          type: "TextBlock",
          wrap: true,
          text:
            `<!here> *${s.name}* aborted: RolloutAborted: Rollout aborted update to revision 2: ` +
            "\\<\\!channel\\> \\<https://evil.example/login\\|Open in Step Functions\\> \\*bold\\* \\&lt; \\[x\\]\\(https://evil.example\\)",
        },
      ]);
    } finally {
      await teams.close();
    }
  });
});
