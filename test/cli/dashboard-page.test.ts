import { type DemoRollouts, startDemoRollouts } from "@sfn-rollouts/test-support/demo-rollouts";
import { runningRollout, T0 } from "@sfn-rollouts/test-support/running-rollout";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { asset } from "../../cli/dashboard/assets.ts";
import { escapeHtml, html } from "../../cli/dashboard/html.ts";
import { loadPageView } from "../../cli/dashboard/load.ts";
import {
  conditionRule,
  numericValue,
  type PageOptions,
  renderConfirmPage,
  renderListPage,
  renderRolloutPage,
  weightPoints,
} from "../../cli/dashboard/page.ts";
import type { RolloutView } from "../../cli/render.ts";
import { abortedStatusMessage } from "../../functions/abort/errors.ts";

/**
 * The report and the dashboard's pages as pure functions of the store's data: the demo's four
 * pushes and a rollout waiting for a person, run in the embedded runtime (`demo-rollouts.ts`).
 */

let demo: DemoRollouts;
let views: Record<string, RolloutView>;

beforeAll(async () => {
  demo = await startDemoRollouts();
  views = {
    demo: await loadPageView(demo.deps, "demo"),
    approval: await loadPageView(demo.deps, "demo-approval"),
  };
}, 120_000);

afterAll(async () => {
  await demo?.close();
});

const report = (): PageOptions => ({
  now: demo.clock.now(),
  mode: { kind: "report", css: asset("dashboard.css") },
});
const dashboard = (): PageOptions => ({
  now: demo.clock.now(),
  mode: { kind: "dashboard", csrf: "token-123", refreshMs: 2000 },
});

/** The values a chart series lists (`data-values`), by series name, in page order. */
function series(page: string, name: string): number[][] {
  return [...page.matchAll(new RegExp(`data-name="${name}" data-values="([^"]*)"`, "g"))].map((m) =>
    (m[1] ?? "").split(" ").map(Number),
  );
}

describe("what a page reads", () => {
  it("reads the current execution's runs and their measurements, not the earlier pushes' runs", async () => {
    const view = views.demo as RolloutView;
    const current = `${view.item.executionArn?.split(":").at(-1)}.`;
    expect(view.runs.map((r) => r.runId)).toEqual([`${current}step01`, `${current}step04`]);
    expect(Object.keys(view.measurements)).toEqual([`${current}step01`, `${current}step04`]);
    expect(view.measurements[`${current}step04`]?.map((m) => m.value.metric).sort()).toEqual([
      "errors",
      "errors",
      "errors",
      "success-rate",
      "success-rate",
    ]);
    // The earlier pushes' runs are in the store all the same.
    expect((await demo.store.listRuns("demo", z.unknown())).length).toBeGreaterThan(view.runs.length);
  });
});

describe("rollouts report: the rollout page as one file", () => {
  it("shows the aborted demo: its message, steps, a weight chart back at 0, the gate's figures, events", () => {
    const page = renderRolloutPage(views.demo as RolloutView, report());
    expect(page).toContain("Rollout demo");
    expect(page).toMatch(
      /RolloutAborted: Rollout aborted update to revision 4: Gate &quot;errors&quot; rolled back: candidate 3\.0% vs stable 1\.0% errors, p = 0\.04\d+ &lt; alpha 0\.05 \(sequential-rate/,
    );
    // Steps 1-4 done, step 5 (the gated analysis) failed.
    expect([...page.matchAll(/class="step (\w+)"/g)].map((m) => m[1])).toEqual([
      "done",
      "done",
      "done",
      "done",
      "failed",
    ]);
    // The weight over the execution: 0 at Begin, 25, 50, then 0 when the gate rolled it back.
    const weights = series(page, "weight")[0] ?? [];
    expect(weights[0]).toBe(0);
    expect(weights).toContain(25);
    expect(weights).toContain(50);
    expect(weights.at(-1)).toBe(0);
    // The gate: candidate 3% against stable 1% at each look, the p-value against alpha 0.05.
    expect(series(page, "candidate")[0]?.every((v) => v === 0.03)).toBe(true);
    expect(series(page, "stable")[0]?.every((v) => v === 0.01)).toBe(true);
    expect(page).toContain('class="rule" data-y="0.05"');
    expect(page).toMatch(/<th>decision<\/th><td>rollback \(FAIL\) at look \d+<\/td>/);
    expect(page).toMatch(/<th>Bayes factor<\/th><td>\d/);
    // The demo's gate is the rollout's only statistical one: its share is the whole budget.
    expect(page).toContain("<th>share of the budget</th><td>0.05 of 0.05 (100%)</td>");
    // The threshold's measurements against its condition's line.
    expect(page).toContain("success when result[0] &gt;= 0.95");
    expect(page).toContain('class="rule" data-y="0.95"');
    expect(series(page, "success-rate")[0]).toEqual([0.97, 0.97]);
    expect(page).toContain('data-type="RolloutAborted"');
  });

  it("stands alone: inline style, no script, no link, a policy that runs nothing", () => {
    const page = renderRolloutPage(views.demo as RolloutView, report());
    expect(page).not.toMatch(/<script|<link|\bsrc=|href="http/i);
    expect(page).toContain("<style>");
    expect(page).toContain(`content="default-src 'none'; style-src 'unsafe-inline'"`);
    expect(page).toContain("<svg");
    expect(page).not.toContain('class="actions"');
  });

  it("marks where a waiting rollout is and draws its weight up to now", () => {
    const page = renderRolloutPage(views.approval as RolloutView, report());
    expect([...page.matchAll(/class="step (\w+)"/g)].map((m) => m[1])).toEqual([
      "done",
      "done",
      "done",
      "paused",
      "todo",
    ]);
    const points = weightPoints((views.approval as RolloutView).item, demo.clock.now() + 60_000);
    expect(points.at(-1)).toMatchObject({ x: demo.clock.now() + 60_000, y: 50 });
  });
});

describe("the dashboard's pages", () => {
  it("lists the rollouts with their status, step and weight, each linking to its page", async () => {
    const page = renderListPage(await demo.store.list(), dashboard());
    expect(page).toContain('<a href="/rollouts/demo">demo</a>');
    expect(page).toContain('<a href="/rollouts/demo-approval">demo-approval</a>');
    expect(page).toMatch(
      /data-rollout="demo"><td class="name">.*Degraded.*<td>4\/5<\/td><td><span class="weight" data-weight="0"/,
    );
    expect(page).toMatch(
      /data-rollout="demo-approval">.*Paused.*<td>3\/5<\/td><td><span class="weight" data-weight="50"/,
    );
    expect(page).toContain('<script src="/assets/dashboard.js" defer></script>');
  });

  it("offers only the operations that apply, each a form carrying the token", () => {
    const paused = renderRolloutPage(views.approval as RolloutView, dashboard());
    const buttons = (page: string) =>
      Object.fromEntries(
        [...page.matchAll(/<button type="submit" class="action ([\w-]+)"[^>]*?( disabled)?>/g)].map((m) => [
          m[1],
          m[2] === undefined,
        ]),
      );
    expect(buttons(paused)).toEqual({ promote: true, "promote-full": true, abort: true, retry: false });
    expect(paused).toContain(
      '<form method="post" action="/rollouts/demo-approval/promote"><input type="hidden" name="csrf" value="token-123">',
    );
    const aborted = renderRolloutPage(views.demo as RolloutView, dashboard());
    expect(buttons(aborted)).toEqual({ promote: false, "promote-full": false, abort: false, retry: true });
  });

  it("asks before acting: the confirmation posts again with confirm=yes, an abort with a reason", () => {
    const page = renderConfirmPage((views.approval as RolloutView).item, "abort", {
      ...dashboard(),
      csrf: "token-123",
    });
    expect(page).toContain("Abort rollout demo-approval?");
    expect(page).toContain('<input type="hidden" name="confirm" value="yes">');
    expect(page).toContain('<textarea name="reason"');
    // Its URL answers only a POST: the script must not reload it.
    expect(page).not.toContain("data-refresh-ms");
    expect(renderRolloutPage(views.approval as RolloutView, dashboard())).toContain('data-refresh-ms="2000"');
  });
});

describe("escaping", () => {
  const hostile = `<script>alert("x")</script>\x1b]0;owned\x07\x1b[2J' onmouseover='x' & more`;

  it("renders an abort reason as text: no markup, no quote that ends an attribute, no control characters", async () => {
    const { item } = await runningRollout({
      name: "web",
      phase: "Degraded",
      message: abortedStatusMessage(2, hostile),
      abortReason: hostile,
      events: [{ at: T0, type: "AbortRequested", message: hostile, weight: 0 }],
      stepLabels: [hostile],
      stepCount: 1,
    });
    const view: RolloutView = { item, runs: [], measurements: {} };
    for (const page of [
      renderRolloutPage(view, { now: T0, mode: { kind: "report", css: "" } }),
      renderRolloutPage(view, { now: T0, mode: { kind: "dashboard", csrf: "t", refreshMs: 1000 } }),
      renderListPage([item], { now: T0, mode: { kind: "dashboard", csrf: "t", refreshMs: 1000 } }),
    ]) {
      expect(page).not.toContain("<script>alert");
      expect(page).not.toContain("' onmouseover='");
      // biome-ignore lint/suspicious/noControlCharactersInRegex: no control character may reach the page
      expect(page).not.toMatch(/[\x00-\x08\x0b-\x1f\x7f-\x9f]/);
      expect(page).toContain("&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;");
      expect(page).toContain("&#39; onmouseover=&#39;x&#39; &amp; more");
    }
  });

  it("escapes every interpolated value and passes only fragments built by the tag", () => {
    expect(html`<a title="${'"><b>'}">${"<i>"}</a>`.text).toBe(
      '<a title="&quot;&gt;&lt;b&gt;">&lt;i&gt;</a>',
    );
    expect(html`<p>${html`<b>${"&"}</b>`}${[1, "<"]}${null}${undefined}${false}</p>`.text).toBe(
      "<p><b>&amp;</b>1&lt;</p>",
    );
    expect(escapeHtml("a\x1b[31mred\x1b[0m\nb")).toBe("ared b");
  });
});

describe("what a chart reads", () => {
  it.each([
    ["0.97", 0.97],
    ["[0.9924]", 0.9924],
    [" [ 12 ] ", 12],
    ["[1, 2]", undefined],
    ['{"a":1}', undefined],
    ["NaN", undefined],
    ["", undefined],
    [undefined, undefined],
  ])("numericValue(%j) is %j", (value, expected) => {
    expect(numericValue(value)).toBe(expected);
  });

  it.each([
    ["result[0] >= 0.95", 0.95],
    ["result < 100", 100],
    ["result[0] <= -1.5e-3", -0.0015],
    ["result[0] >= 0.95 && result[0] <= 1", undefined],
    ["len(result) > 0", undefined],
    [undefined, undefined],
  ])("conditionRule(%j) is %j", (condition, expected) => {
    expect(conditionRule(condition)).toBe(expected);
  });
});
