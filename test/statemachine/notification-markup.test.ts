import { describe, expect, it } from "vitest";
import { escapeFor, escapeSlack, escapeTeams } from "../../statemachine/notification-markup.ts";

describe("Slack's mrkdwn escaping", () => {
  it.each([
    { name: "a special mention", given: "<!channel>", sent: "&lt;!channel&gt;" },
    { name: "a user mention", given: "<@U123>", sent: "&lt;@U123&gt;" },
    {
      name: "a disguised link",
      given: "<https://evil.example/login|Open in Step Functions>",
      sent: "&lt;https://evil.example/login|Open in Step Functions&gt;",
    },
    { name: "an entity, kept as typed", given: "&lt; & &amp;", sent: "&amp;lt; &amp; &amp;amp;" },
    { name: "text with none of the three", given: "p95 120 ms *up* 3%", sent: "p95 120 ms *up* 3%" },
  ])("$name", ({ given, sent }) => {
    expect(escapeSlack(given)).toBe(sent);
  });
});

describe("Teams' Adaptive Card Markdown escaping", () => {
  it.each([
    {
      name: "a link",
      given: "[Open](https://evil.example)",
      sent: String.raw`\[Open\]\(https://evil.example\)`,
    },
    { name: "a mention tag", given: "<at>Ops</at>", sent: String.raw`\<at\>Ops\</at\>` },
    { name: "emphasis", given: "**bold** _it_ `code`", sent: String.raw`\*\*bold\*\* \_it\_ \`code\`` },
    { name: "a backslash of its own", given: String.raw`C:\tmp`, sent: String.raw`C:\\tmp` },
    {
      name: "list markers at a line's start",
      given: "- a\n  + b\n3. c\n4) d",
      sent: "\\- a\n  \\+ b\n3\\. c\n4\\) d",
    },
    { name: "a dash or a number inside a line", given: "v1.2 - 3. 4", sent: "v1.2 - 3. 4" },
  ])("$name", ({ given, sent }) => {
    expect(escapeTeams(given)).toBe(sent);
  });

  it("leaves null (an image not known yet) as null in every format", () => {
    expect(escapeFor("slack", null)).toBeNull();
    expect(escapeFor("teams", null)).toBeNull();
  });
});
