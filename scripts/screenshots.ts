// `npm run screenshots`: the dashboard's pictures in docs/img/, taken in Debian's chromium
// (headless, through puppeteer-core) on the demo's rollouts run in the embedded runtime in
// virtual time, so the same code draws the same pictures on every machine that runs it.
import { fileURLToPath } from "node:url";
import { launchChromium } from "@sfn-rollouts/test-support/browser";
import { startDemoRollouts } from "@sfn-rollouts/test-support/demo-rollouts";
import { startDashboard } from "../cli/dashboard/server.ts";

const out = (name: string) => fileURLToPath(new URL(`../docs/img/${name}`, import.meta.url));

const demo = await startDemoRollouts();
const dashboard = await startDashboard({ deps: demo.deps, port: 0, refreshMs: 2000 });
const browser = await launchChromium();
try {
  const page = await browser.newPage();
  await page.setViewport({ width: 1100, height: 260, deviceScaleFactor: 1 });
  await page.goto(dashboard.url);
  await page.screenshot({ path: out("dashboard-list.png"), fullPage: true });
  await page.setViewport({ width: 1100, height: 900, deviceScaleFactor: 1 });
  await page.goto(`${dashboard.url}/rollouts/demo`);
  // The status, the steps, the weight and the gated analysis that decided; not every event.
  const height = await page.$eval(".runs", (runs) => Math.ceil(runs.getBoundingClientRect().bottom) + 16);
  await page.screenshot({ path: out("dashboard-rollout.png"), clip: { x: 0, y: 0, width: 1100, height } });
  process.stdout.write(`wrote ${out("dashboard-list.png")} and ${out("dashboard-rollout.png")}\n`);
} finally {
  await browser.close();
  await dashboard.close();
  await demo.close();
}
