import { formatDuration } from "../../statemachine/duration.ts";
import { asset } from "../dashboard/assets.ts";
import { lineChart, type Point } from "../dashboard/charts.ts";
import { type Html, html, raw } from "../dashboard/html.ts";
import type { SecondRecord } from "../simulate/runtime.ts";
import type { DesignReport, ReportCandidate } from "./report.ts";

/**
 * `rollouts design --html FILE`: one self-contained page (the report's stylesheet inline, the
 * charts as inline SVG drawn by the dashboard's `lineChart`, no script, no link) with, for every
 * simulated candidate, the requests its bad version served over time beside the chosen one's.
 */

/** A candidate's exposure over time: the bad version's requests so far, at each second of its run. */
export function exposurePoints(series: readonly SecondRecord[]): Point[] {
  let total = 0;
  const points: Point[] = [{ x: 0, y: 0 }];
  for (const s of series) {
    total += s.newRequests;
    points.push({
      x: (s.t + 1) * 1000,
      y: total,
      label: `${formatDuration(s.t + 1)}: ${total.toLocaleString("en-US")} requests`,
    });
  }
  return points;
}

export interface PageSeries {
  /** Each simulated candidate's series, by its id: the error and the latency regressions. */
  byId: ReadonlyMap<string, { errors: readonly SecondRecord[]; latency: readonly SecondRecord[] }>;
}

function chartOf(
  report: DesignReport,
  c: ReportCandidate,
  which: "errors" | "latency",
  series: PageSeries,
): Html {
  const chosenId = report.chosen?.id;
  const own = exposurePoints(series.byId.get(c.id)?.[which] ?? []);
  const theirs =
    chosenId && chosenId !== c.id ? exposurePoints(series.byId.get(chosenId)?.[which] ?? []) : [];
  const top = Math.max(0, ...own.map((p) => p.y), ...theirs.map((p) => p.y));
  const budget = report.inputs.exposureBudget;
  return lineChart({
    title: `requests served by the ${which === "errors" ? "failing" : "slow"} version under ${c.id}`,
    // The chosen plan first, so the candidate's own line is drawn over it where they coincide.
    series: [
      ...(theirs.length > 0 ? [{ name: "chosen", kind: "candidate" as const, points: theirs }] : []),
      { name: c.chosen ? "chosen" : "this candidate", kind: c.chosen ? "candidate" : "value", points: own },
    ],
    // The budget is drawn only when it is on the scale of the curves.
    ...(budget <= 5 * Math.max(1, top) ? { rules: [{ y: budget, label: `budget ${budget}` }] } : {}),
    yMin: 0,
    // Head room above the highest line or rule, for the rule's label.
    yMax: 1.1 * Math.max(1, top, budget <= 5 * Math.max(1, top) ? budget : 0),
    format: (y) => String(Math.round(y)),
  });
}

function section(report: DesignReport, c: ReportCandidate, series: PageSeries): Html {
  const verdict = c.chosen ? "chosen" : c.verdict.accepted ? "accepted" : `rejected: ${c.verdict.reason}`;
  const good = c.simulated.good;
  return html`<section class="candidate" data-candidate="${c.id}" data-verdict="${c.chosen ? "chosen" : c.verdict.accepted ? "accepted" : "rejected"}"><h2>${c.id}</h2><p><code>${c.plan}</code>: a look every ${formatDuration(c.intervalSeconds)}, ${c.count} per step, failureLimit ${c.failureLimit}. A good version ${good.outcome}${good.at === null ? "" : ` at ${formatDuration(good.at)}`}; ${verdict}.</p><h3>Errors at the SLO's rate</h3>${chartOf(report, c, "errors", series)}<h3>Latency past the SLO's p95</h3>${chartOf(report, c, "latency", series)}</section>`;
}

function candidatesTable(report: DesignReport): Html {
  const rows = report.candidates.map((c) => {
    const verdict = c.chosen ? "chosen" : c.verdict.accepted ? "accepted" : `rejected: ${c.verdict.reason}`;
    const good = c.simulated.good;
    return html`<tr data-candidate="${c.id}"><td class="name">${c.id}</td><td><code>${c.plan}</code></td><td>${formatDuration(c.promoteSeconds)}</td><td>${good.outcome}${good.at === null ? "" : ` ${formatDuration(good.at)}`}</td><td>${c.verdict.exposure ?? "-"}</td><td>${verdict}</td></tr>`;
  });
  return html`<table class="candidates"><thead><tr><th>Candidate</th><th>Plan</th><th>On paper</th><th>Good version</th><th>Exposure</th><th>Verdict</th></tr></thead><tbody>${rows}</tbody></table>`;
}

/** The page. */
export function renderDesignPage(report: DesignReport, series: PageSeries): string {
  const i = report.inputs;
  const title = `Rollout design: ${i.name}`;
  const summary = report.chosen
    ? html`<p>Chosen: <code>${report.chosen.plan}</code> (${report.chosen.id}); a good version is promoted in ${formatDuration(report.chosen.simulated.good.at ?? 0)}, a bad version serves at most ${(report.chosen.verdict.exposure ?? 0).toLocaleString("en-US")} requests of the budget's ${i.exposureBudget.toLocaleString("en-US")}.</p>`
    : html`<p>No candidate was accepted.</p>`;
  const ordered = [...report.candidates].sort((a, b) => Number(b.chosen) - Number(a.chosen));
  const body = html`<header><h1>${title}</h1></header><main><p>${i.rps} rps; SLO: errors ≤ ${i.sloErrorRate}, p95 ≤ ${i.sloP95Ms} ms; ${i.router === "none" ? `${i.replicas} pods behind one Service` : `${i.router} (exact weights)`}. The charts count the requests each simulated bad version served, second by second, until it was stopped.</p>${summary}${candidatesTable(report)}${ordered.map((c) => section(report, c, series))}</main>`;
  return html`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'"><title>${title}</title><style>${raw(asset("dashboard.css"))}</style></head>
<body>${body}</body></html>
`.text;
}
