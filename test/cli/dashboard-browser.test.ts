import { launchChromium } from "@sfn-rollouts/test-support/browser";
import { type DemoRollouts, startDemoRollouts } from "@sfn-rollouts/test-support/demo-rollouts";
import type { Browser, Page } from "puppeteer-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type RunningDashboard, startDashboard } from "../../cli/dashboard/server.ts";

/**
 * The dashboard in a real browser (Debian's chromium, headless) on the demo's rollouts run in the
 * embedded runtime: the list, the aborted rollout's message and weight chart, and the Promote
 * button ending a pause, with the page refreshing itself as the rollout moves on.
 */

let demo: DemoRollouts;
let dashboard: RunningDashboard;
let browser: Browser;
let page: Page;

beforeAll(async () => {
  demo = await startDemoRollouts();
  dashboard = await startDashboard({ deps: demo.deps, port: 0, refreshMs: 300, log: () => {} });
  browser = await launchChromium();
  page = await browser.newPage();
  await page.setViewport({ width: 1100, height: 900 });
});

afterAll(async () => {
  await browser?.close();
  await dashboard?.close();
  await demo?.close();
});

describe("the dashboard in chromium", () => {
  it("lists the demo's rollouts with their status, step and weight", async () => {
    await page.goto(dashboard.url);
    const rows = await page.$$eval("tr[data-rollout]", (trs) =>
      trs.map((tr) => [...tr.querySelectorAll("td")].slice(0, 4).map((td) => td.textContent?.trim())),
    );
    expect(rows).toEqual([
      ["demo", "✖ Degraded", "4/5", "0%"],
      ["demo-approval", "‖ Paused", "3/5", "50%"],
    ]);
  });

  it("shows the aborted rollout's message and a weight chart that returns to 0", async () => {
    await Promise.all([page.waitForNavigation(), page.click('a[href="/rollouts/demo"]')]);
    const message = await page.$eval(".status-message", (el) => el.textContent);
    expect(message).toMatch(
      /^RolloutAborted: Rollout aborted update to revision 4: Gate "errors" rolled back: candidate 3\.0% vs stable 1\.0% errors/,
    );
    // Read off the drawn chart: the last point of the weight line sits on the 0% grid line.
    const chart = await page.$eval(".weight-chart svg", (svg) => {
      const zero = [...svg.querySelectorAll("text")].find((t) => t.textContent === "0%");
      const zeroY = Number(zero?.getAttribute("y")) - 4;
      const dots = [...svg.querySelectorAll(".series.weight circle")].map((c) =>
        Number(c.getAttribute("cy")),
      );
      const line = svg.querySelector(".series.weight polyline") as unknown as { getTotalLength(): number };
      return { zeroY, dots, length: line.getTotalLength(), visible: svg.getBoundingClientRect().height > 50 };
    });
    expect(chart.visible).toBe(true);
    expect(chart.length).toBeGreaterThan(0);
    expect(chart.dots.at(-1)).toBeCloseTo(chart.zeroY, 1);
    expect(Math.min(...chart.dots)).toBeLessThan(chart.zeroY);
  });

  it("ends a pause with the Promote button, after a confirmation, and refreshes as the rollout goes on", async () => {
    await page.goto(`${dashboard.url}/rollouts/demo-approval`);
    expect(await page.$eval("main", (m) => m.dataset.phase)).toBe("Paused");
    await Promise.all([page.waitForNavigation(), page.click("button.action.promote")]);
    // Nothing is done before the confirmation.
    expect(await page.$eval("h2", (h) => h.textContent)).toBe("Promote rollout demo-approval?");
    expect((await demo.store.get("demo-approval"))?.phase).toBe("Paused");
    await Promise.all([page.waitForNavigation(), page.click("button.confirm")]);
    expect(await page.$eval(".notice", (n) => n.className)).toBe("notice ok");
    // The wait is over: the workflow goes on (in virtual time) to the gated analysis and promotes.
    expect(await demo.approval.run(demo.approvalExecution)).toEqual({ state: "Healthy" });
    await page.waitForFunction('document.querySelector("main")?.dataset.phase === "Healthy"', {
      timeout: 10_000,
    });
    const states = await page.$$eval("li.step", (lis) => lis.map((li) => li.dataset.state));
    expect(states).toEqual(["done", "done", "done", "done", "done"]);
  });
});
