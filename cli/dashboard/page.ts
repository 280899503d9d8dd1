import type { GateFigures, Measurement } from "../../functions/analysis/types.ts";
import type { StoredRun } from "../../functions/store/port.ts";
import type { RolloutItem } from "../../functions/store/schema.ts";
import type { StoredAnalysis } from "../../functions/workflow/analysis.ts";
import type { OperateOutcome } from "../../functions/workflow/operate.ts";
import {
  currentEvents,
  currentStepOf,
  imageLines,
  inferStrategy,
  isoSeconds,
  PHASE_ICON,
  type RolloutView,
  runsOfCurrentExecution,
  stepSummary,
} from "../render.ts";
import { lineChart, type Point } from "./charts.ts";
import { type Html, html, raw } from "./html.ts";

/**
 * The dashboard's pages and the report, as pure functions of what the store holds and the time,
 * like `rollouts get`'s frames (`cli/render.ts`, whose helpers they share): the same rollout page
 * is served live by `rollouts dashboard` and written as one file by `rollouts report`. Every value
 * from the store goes through the `html` tag, which escapes it.
 */

/** The operations the rollout page offers, as the CLI names them. */
export const ACTIONS = {
  promote: {
    label: "Promote",
    confirm: "End the current pause or approval: the rollout goes on to its next step.",
  },
  "promote-full": {
    label: "Promote full",
    confirm: "Skip every remaining step, an analysis included: the candidate gets all the traffic now.",
  },
  abort: {
    label: "Abort",
    confirm: "Abort the rollout: traffic goes back to the stable revision and the rollout is Degraded.",
  },
  retry: { label: "Retry", confirm: "Run the steps of the aborted revision again." },
} as const;
export type Action = keyof typeof ACTIONS;

/** How a page is shown: live in the dashboard (links, buttons, the refresh script) or as a report file. */
export type PageMode =
  | {
      kind: "dashboard";
      /** The token every form carries back (`server.ts`). */
      csrf: string;
      /** Milliseconds between the script's refreshes. */
      refreshMs: number;
    }
  | {
      kind: "report";
      /** The stylesheet, inlined: the file must stand alone. */
      css: string;
    };

export interface PageOptions {
  /** Epoch ms: the right end of the charts of a rollout still moving, the page's "as of". */
  now: number;
  mode: PageMode;
  /** What the last operation answered, shown once at the top. */
  notice?: OperateOutcome | undefined;
}

const path = (name: string) => `/rollouts/${encodeURIComponent(name)}`;

/**
 * The whole HTML document around a page's body. `live`: the dashboard's script reloads it (not a
 * confirmation, whose URL answers only a POST, nor an error page).
 */
function documentOf(title: string, body: Html, options: PageOptions, live = true): string {
  const { mode } = options;
  const head =
    mode.kind === "dashboard"
      ? html`<link rel="stylesheet" href="/assets/dashboard.css"><script src="/assets/dashboard.js" defer></script>`
      : html`<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'"><style>${raw(mode.css)}</style>`;
  const refresh = mode.kind === "dashboard" && live ? html` data-refresh-ms="${mode.refreshMs}"` : "";
  return html`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><meta name="referrer" content="same-origin"><title>${title}</title>${head}</head>
<body${refresh}>${body}</body></html>
`.text;
}

function noticeOf(notice: OperateOutcome | undefined): Html | string {
  if (!notice) return "";
  return html`<p class="notice ${notice.ok ? "ok" : "refused"}" role="status">${notice.message}</p>`;
}

/**
 * The terminal's icons, but for the pause: `॥` is a Devanagari sign that many fonts a browser
 * falls back to do not have, and `‖` says the same.
 */
const ICON: Record<RolloutItem["phase"], string> = { ...PHASE_ICON, Paused: "‖" };

function phaseBadge(phase: RolloutItem["phase"]): Html {
  return html`<span class="phase ${phase}">${ICON[phase]} ${phase}</span>`;
}

function footer(options: PageOptions): Html {
  const live =
    options.mode.kind === "dashboard"
      ? html` · <span id="live">refreshing every ${options.mode.refreshMs / 1000} s</span>`
      : "";
  return html`<footer>sfn-rollouts · as of ${isoSeconds(options.now)}${live}</footer>`;
}

/** `/`: the rollouts in the table, one row each. */
export function renderListPage(items: RolloutItem[], options: PageOptions): string {
  const rows = items.map((item) => {
    const canary =
      item.currentRevision && item.currentRevision.digest !== item.stableRevision?.digest
        ? String(item.currentRevision.revision)
        : "-";
    const name =
      options.mode.kind === "dashboard" ? html`<a href="${path(item.name)}">${item.name}</a>` : item.name;
    return html`<tr data-rollout="${item.name}"><td class="name">${name}</td><td>${phaseBadge(item.phase)}</td><td>${currentStepOf(item)}/${item.stepCount}</td><td>${weightBar(item.weight)}</td><td>${item.stableRevision ? item.stableRevision.revision : "-"}</td><td>${canary}</td><td>${isoSeconds(item.updatedAt)}</td><td class="message">${item.message}</td></tr>`;
  });
  const table =
    items.length === 0
      ? html`<p class="no-data">No rollouts found.</p>`
      : html`<table class="rollouts"><thead><tr><th>Name</th><th>Status</th><th>Step</th><th>Weight</th><th>Stable</th><th>Canary</th><th>Updated</th><th>Message</th></tr></thead><tbody>${rows}</tbody></table>`;
  const body = html`<header><h1>Rollouts</h1></header><main id="view">${noticeOf(options.notice)}${table}</main>${footer(options)}`;
  return documentOf("Rollouts", body, options);
}

function weightBar(weight: number): Html {
  return html`<span class="weight" data-weight="${weight}"><svg class="bar" width="60" height="8" viewBox="0 0 100 8" preserveAspectRatio="none" aria-hidden="true"><rect width="100" height="8" fill="#e5e7eb"/><rect width="${weight}" height="8" fill="#2f6fdf"/></svg> ${weight}%</span>`;
}

/** The rollout page: status, actions, steps, the weight over time, analysis runs with charts, events. */
export function renderRolloutPage(view: RolloutView, options: PageOptions): string {
  const { item } = view;
  const dashboard = options.mode.kind === "dashboard";
  const header = dashboard
    ? html`<header><h1><a href="/">Rollouts</a> / ${item.name}</h1></header>`
    : html`<header><h1>Rollout ${item.name}</h1></header>`;
  const body = html`${header}<main id="view" data-rollout="${item.name}" data-phase="${item.phase}">${noticeOf(options.notice)}${summary(item)}${options.mode.kind === "dashboard" ? actions(item, options.mode.csrf) : ""}${steps(item)}${weightSection(item, options.now)}${runsSection(view)}${eventsSection(item)}</main>${footer(options)}`;
  return documentOf(`Rollout ${item.name}`, body, options);
}

function summary(item: RolloutItem): Html {
  const rows: Array<[string, Html | string]> = [["Status", phaseBadge(item.phase)]];
  if (item.message) rows.push(["Message", html`<span class="status-message">${item.message}</span>`]);
  const strategy = inferStrategy(item);
  if (strategy) rows.push(["Strategy", strategy]);
  rows.push(["Step", `${currentStepOf(item)}/${item.stepCount}`]);
  rows.push([
    "Weight",
    html`${weightBar(item.weight)}${item.drift ? html` <span class="drift">changed by someone else: ${item.drift.message}</span>` : ""}`,
  ]);
  const images = imageLines(item);
  rows.push([
    "Images",
    images.length ? html`${images.map((line) => html`<div>${line}</div>`)}` : "none deployed yet",
  ]);
  if (item.executionArn) rows.push(["Execution", item.executionArn.split(":").at(-1) ?? item.executionArn]);
  if (item.waitingFor && item.waitingSince !== null) {
    const until = item.pause?.until ? `, resumes at ${isoSeconds(item.pause.until)}` : "";
    rows.push(["Waiting for", `${item.waitingFor} since ${isoSeconds(item.waitingSince)}${until}`]);
  }
  if (item.abortRequested && item.phase !== "Degraded")
    rows.push(["Abort requested", item.abortReason ?? "yes"]);
  return html`<section class="summary"><dl>${rows.map(([k, v]) => html`<dt>${k}</dt><dd>${v}</dd>`)}</dl></section>`;
}

/** Which operations can apply now; the others are shown disabled (the domain refuses them anyway). */
export function applicable(item: RolloutItem): Record<Action, boolean> {
  const running = item.phase === "Progressing" || item.phase === "Paused";
  return {
    // A hook gives its own verdict: nobody promotes past it.
    promote:
      running &&
      item.currentTaskToken !== null &&
      item.waitingFor !== "analysis" &&
      item.waitingFor !== "hook",
    "promote-full": running && item.currentTaskToken !== null && item.waitingFor !== "hook",
    abort: running,
    retry: item.phase === "Degraded",
  };
}

function actions(item: RolloutItem, csrf: string): Html {
  const can = applicable(item);
  const forms = (Object.keys(ACTIONS) as Action[]).map(
    (action) =>
      html`<form method="post" action="${path(item.name)}/${action}"><input type="hidden" name="csrf" value="${csrf}"><button type="submit" class="action ${action}" name="action" value="${action}"${can[action] ? "" : html` disabled`}>${ACTIONS[action].label}</button></form>`,
  );
  return html`<section class="actions">${forms}</section>`;
}

/** The confirmation an action's first POST answers with: nothing is done until it is confirmed. */
export function renderConfirmPage(
  item: RolloutItem,
  action: Action,
  options: PageOptions & { csrf: string },
): string {
  const reason =
    action === "abort"
      ? html`<label>Reason (kept in the status message and the events)<textarea name="reason" rows="2" maxlength="1000"></textarea></label>`
      : "";
  const body = html`<header><h1><a href="/">Rollouts</a> / <a href="${path(item.name)}">${item.name}</a></h1></header><main id="view"><section class="confirm"><h2>${ACTIONS[action].label} rollout ${item.name}?</h2><p>${ACTIONS[action].confirm}</p><p>It is ${phaseBadge(item.phase)} at step ${currentStepOf(item)}/${item.stepCount}, weight ${item.weight}%.</p><form method="post" action="${path(item.name)}/${action}"><input type="hidden" name="csrf" value="${options.csrf}"><input type="hidden" name="confirm" value="yes">${reason}<button type="submit" class="action ${action} confirm">${ACTIONS[action].label}</button> <a class="cancel" href="${path(item.name)}">Cancel</a></form></section></main>`;
  return documentOf(`${ACTIONS[action].label} ${item.name}?`, body, options, false);
}

/** A page for what could not be shown: an unknown rollout, a refused request, the store failing. */
export function renderErrorPage(title: string, message: string, options: PageOptions): string {
  const body = html`<header><h1><a href="/">Rollouts</a></h1></header><main id="view"><section class="error"><h2>${title}</h2><p>${message}</p></section></main>`;
  return documentOf(title, body, options, false);
}

function steps(item: RolloutItem): Html | string {
  if (item.stepCount === 0) return "";
  const current = currentStepOf(item);
  const events = currentEvents(item);
  const rows = Array.from({ length: item.stepCount }, (_, i) => {
    const state =
      i < current || item.phase === "Healthy"
        ? "done"
        : i > current
          ? "todo"
          : item.phase === "Degraded"
            ? "failed"
            : item.phase === "Paused"
              ? "paused"
              : "current";
    const label = item.stepLabels[i] ?? "";
    const did = stepSummary(events, i);
    return html`<li class="step ${state}" data-state="${state}"><span class="index">${i + 1}</span> <span class="label">${label || `step ${i + 1}`}</span>${did && did !== label ? html` <span class="did">${did}</span>` : ""}</li>`;
  });
  return html`<section><h2>Steps</h2><ol class="steps">${rows}</ol></section>`;
}

/**
 * The weight of the current execution over time: every event of a workflow step records the
 * weight it wrote; an execution starts at 0 (Begin takes back any traffic before the first step).
 * A rollout still moving is drawn up to now.
 */
export function weightPoints(item: RolloutItem, now: number): Point[] {
  const events = currentEvents(item);
  const points: Point[] = [];
  const start = events[0];
  if (start?.type === "RolloutUpdated")
    points.push({ x: start.at, y: 0, label: `${isoSeconds(start.at)}  started at 0%` });
  for (const event of events) {
    if (event.weight === undefined) continue;
    points.push({
      x: event.at,
      y: event.weight,
      label: `${isoSeconds(event.at)}  ${event.weight}%  ${event.type}`,
    });
  }
  const last = points.at(-1);
  if (last && (item.phase === "Progressing" || item.phase === "Paused") && now > last.x) {
    points.push({ x: now, y: last.y, label: `${isoSeconds(now)}  ${last.y}% now` });
  }
  return points;
}

function weightSection(item: RolloutItem, now: number): Html {
  const points = weightPoints(item, now);
  const chart =
    points.length === 0
      ? html`<p class="no-data">No weight recorded for this execution.</p>`
      : lineChart({
          title: `weight of ${item.name} over time`,
          series: [{ name: "weight", kind: "weight", points, step: true }],
          yMin: 0,
          yMax: 100,
          format: (y) => `${y}%`,
        });
  return html`<section class="weight-chart"><h2>Weight</h2>${chart}</section>`;
}

/** A measurement's value as a number when it is one (`0.99`, a one-element vector `[0.99]`). */
export function numericValue(value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const text = value.trim().replace(/^\[\s*([^,\s\]]+)\s*\]$/, "$1");
  if (text === "") return undefined;
  const n = Number(text);
  return Number.isFinite(n) ? n : undefined;
}

/**
 * The constant a simple condition compares the result with (`result[0] >= 0.95`,
 * `result < 100`): drawn as a line on the chart. Any other condition is shown as its text only.
 */
export function conditionRule(condition: string | undefined): number | undefined {
  if (!condition) return undefined;
  const m = /^\s*(?:result(?:\[0\])?)\s*(?:>=|<=|>|<|==)\s*(-?\d+(?:\.\d+)?(?:e-?\d+)?)\s*$/i.exec(condition);
  return m ? Number(m[1]) : undefined;
}

function measurementTime(m: Measurement, fallback: number): number {
  const t = Date.parse(m.finishedAt);
  return Number.isFinite(t) ? t : fallback;
}

function runsSection(view: RolloutView): Html | string {
  const runs = runsOfCurrentExecution(view);
  if (runs.length === 0) return "";
  return html`<section class="runs"><h2>Analysis runs</h2>${runs.map((run) => runSection(run, view))}</section>`;
}

function runSection(stored: StoredRun<StoredAnalysis>, view: RolloutView): Html {
  const { run, background, stepIndex, templates } = stored.run;
  const where = background ? "background" : `step ${stepIndex + 1}`;
  const measured = view.measurements[stored.runId] ?? [];
  const metricNames = [
    ...new Set([...run.metrics.map((m) => m.name), ...measured.map((m) => m.value.metric)]),
  ];
  const metrics = metricNames.map((name) => {
    const spec = run.metrics.find((m) => m.name === name);
    const result = run.metricResults.find((r) => r.name === name);
    const fromStore = measured.filter((m) => m.value.metric === name);
    // The store keeps every measurement (until TTL); the run keeps the last few: prefer the store.
    const list: Array<{ at: number; m: Measurement }> =
      fromStore.length > 0
        ? fromStore.map((s) => ({ at: measurementTime(s.value, s.at), m: s.value }))
        : (result?.measurements ?? []).map((m) => ({ at: measurementTime(m, 0), m }));
    const judged = spec?.provider.judge !== undefined || list.some((x) => x.m.judge);
    const counts = result
      ? html`<p class="counts">${result.successful} successful, ${result.failed} failed, ${result.inconclusive} inconclusive, ${result.error} error${result.held > 0 ? `, ${result.held} held` : ""}</p>`
      : "";
    const condition = spec
      ? [
          spec.successCondition ? `success when ${spec.successCondition}` : "",
          spec.failureCondition ? `failure when ${spec.failureCondition}` : "",
        ]
          .filter(Boolean)
          .join("; ")
      : "";
    const chart = judged ? gateCharts(name, list) : valueChart(name, list, spec);
    const gate = result?.judge?.last;
    return html`<div class="metric" data-metric="${name}"><h4>${result ? html`<span class="phase ${result.phase}">${result.phase}</span> ` : ""}${name}${result?.dryRun ? " (dry run)" : ""}</h4>${condition ? html`<p class="condition">${condition}</p>` : ""}${counts}${chart}${gate ? gateFigures(gate) : ""}${measurementsTable(list)}</div>`;
  });
  return html`<article class="run" data-run="${stored.runId}"><h3><span class="phase ${run.phase}">${run.phase}</span> ${stored.runId} <small>${where} · ${templates.join(", ")}</small></h3>${run.message ? html`<p class="run-message">${run.message}</p>` : ""}${metrics}</article>`;
}

function valueChart(
  name: string,
  list: Array<{ at: number; m: Measurement }>,
  spec: StoredAnalysis["run"]["metrics"][number] | undefined,
): Html {
  const points: Point[] = [];
  for (const { at, m } of list) {
    const y = numericValue(m.value);
    if (y !== undefined)
      points.push({ x: at, y, phase: m.phase, label: `${isoSeconds(at)}  ${m.value}  ${m.phase}` });
  }
  if (points.length === 0) return html`<p class="no-data">No numeric measurement to chart.</p>`;
  const rules: Array<{ y: number; label: string }> = [];
  const success = conditionRule(spec?.successCondition);
  if (success !== undefined) rules.push({ y: success, label: spec?.successCondition ?? "" });
  const failure = conditionRule(spec?.failureCondition);
  if (failure !== undefined) rules.push({ y: failure, label: spec?.failureCondition ?? "" });
  return lineChart({ title: `${name} measurements`, series: [{ name, kind: "value", points }], rules });
}

/** A gate: the candidate's and the stable version's values at each look, and the p-value against alpha. */
function gateCharts(name: string, list: Array<{ at: number; m: Measurement }>): Html {
  const looks = list.filter((x) => x.m.judge);
  const side = (which: "candidate" | "stable"): Point[] =>
    looks.flatMap(({ at, m }) => {
      const v = m.judge?.[which]?.value;
      return typeof v === "number"
        ? [{ x: at, y: v, label: `${isoSeconds(at)}  ${which} ${v} (n = ${m.judge?.[which]?.n ?? "?"})` }]
        : [];
    });
  const p: Point[] = looks.flatMap(({ at, m }) =>
    typeof m.judge?.pValue === "number"
      ? [
          {
            x: at,
            y: m.judge.pValue,
            phase: m.phase,
            label: `${isoSeconds(at)}  p = ${m.judge.pValue}  ${m.judge.decision}`,
          },
        ]
      : [],
  );
  const alpha = looks.map((x) => x.m.judge?.alpha).find((a) => a !== undefined);
  const values = lineChart({
    title: `${name}: candidate and stable`,
    series: [
      { name: "candidate", kind: "candidate", points: side("candidate") },
      { name: "stable", kind: "stable", points: side("stable") },
    ],
  });
  const pChart =
    p.length === 0
      ? ""
      : lineChart({
          title: `${name}: p-value`,
          series: [{ name: "p-value", kind: "pvalue", points: p }],
          yMin: 0,
          yMax: 1,
          ...(alpha === undefined ? {} : { rules: [{ y: alpha, label: `alpha ${alpha}` }] }),
        });
  return html`<div class="gate-charts">${values}${pChart}</div>`;
}

function figure(value: number | null | undefined): string {
  return value === null || value === undefined ? "-" : String(Number(value.toPrecision(4)));
}

function gateFigures(gate: GateFigures): Html {
  const rows: Array<[string, string]> = [
    ["test", gate.test],
    ["decision", `${gate.decision} (${gate.verdict}) at look ${gate.look}`],
    ["candidate", gate.candidate ? `${figure(gate.candidate.value)} (n = ${figure(gate.candidate.n)})` : "-"],
    ["stable", gate.stable ? `${figure(gate.stable.value)} (n = ${figure(gate.stable.n)})` : "-"],
    ["effect", figure(gate.effect)],
    ["p-value", figure(gate.pValue)],
    ["Bayes factor", figure(gate.bayesFactor)],
    ["alpha", gate.alpha === undefined ? "-" : String(gate.alpha)],
  ];
  // A gate of the rollout's error budget: its share, and what each decision spends of it.
  if (gate.budget) {
    const part = `${Number(((100 * gate.budget.share) / gate.budget.rollout).toFixed(1))}%`;
    const spread = gate.budget.decisions > 1 ? `, spent over ${gate.budget.decisions} analyses` : "";
    rows.push(["share of the budget", `${gate.budget.share} of ${gate.budget.rollout} (${part})${spread}`]);
  }
  if (gate.score !== undefined) rows.push(["score", figure(gate.score)]);
  return html`<div class="gate"><p class="gate-reason">${gate.reason}</p><table class="figures"><tbody>${rows.map(([k, v]) => html`<tr><th>${k}</th><td>${v}</td></tr>`)}</tbody></table></div>`;
}

/** The last measurements, newest first. */
function measurementsTable(list: Array<{ at: number; m: Measurement }>): Html | string {
  if (list.length === 0) return html`<p class="no-data">No measurement yet.</p>`;
  const shown = list.slice(-10).reverse();
  return html`<details class="measurements"><summary>${list.length} measurement${list.length === 1 ? "" : "s"}</summary><table><thead><tr><th>Time</th><th>Phase</th><th>Value</th><th>Message</th></tr></thead><tbody>${shown.map(
    ({ at, m }) =>
      html`<tr><td>${isoSeconds(at)}</td><td><span class="phase ${m.phase}">${m.phase !== "Running" ? m.phase : m.resumeAt ? "running" : "hold"}</span></td><td>${m.value ?? ""}</td><td>${m.message ?? m.judge?.reason ?? ""}</td></tr>`,
  )}</tbody></table></details>`;
}

/** The current execution's events, newest first; the older ones the item keeps folded below them. */
function eventsSection(item: RolloutItem): Html | string {
  if (item.events.length === 0) return "";
  const current = currentEvents(item);
  const older = item.events.slice(0, item.events.length - current.length);
  const table = (events: RolloutItem["events"]) =>
    html`<table><thead><tr><th>Time</th><th>Type</th><th>Step</th><th>Message</th></tr></thead><tbody>${[
      ...events,
    ]
      .reverse()
      .map(
        (e) =>
          html`<tr class="event" data-type="${e.type}"><td>${isoSeconds(e.at)}</td><td>${e.type}</td><td>${e.step === undefined ? "" : e.step + 1}</td><td class="message">${e.message}</td></tr>`,
      )}</tbody></table>`;
  const earlier =
    older.length === 0
      ? ""
      : html`<details class="older-events"><summary>${older.length} earlier event${older.length === 1 ? "" : "s"}</summary>${table(older)}</details>`;
  return html`<section class="events"><h2>Events</h2>${table(current)}${earlier}</section>`;
}
