import { formatDuration } from "../duration.ts";
import type { PlanStep } from "../plan.ts";
import type { RolloutSpec } from "../spec.ts";
import { type Finding, finding } from "./finding.ts";
import {
  descendants,
  edit,
  functionName,
  operands,
  placeholdersIn,
  restore,
  type SyntaxNode,
  textOf,
} from "./promql.ts";
import { type QueryAt, queryName } from "./queries.ts";
import { servedBefore } from "./timing.ts";

/**
 * Check 4, the windows of range functions (`rate(x[1m])`): one longer than the candidate has
 * served at the first measurement averages in time it has not filled; one shorter than two scrape
 * intervals holds fewer than the two samples rate() needs.
 */

/** Functions whose window is a stretch of history. */
const RANGE_FUNCTIONS =
  /^(rate|irate|increase|delta|idelta|deriv|predict_linear|changes|resets|\w+_over_time)$/;
/** Those that need two samples in the window to answer. */
const TWO_SAMPLES = new Set(["rate", "irate", "increase", "delta", "idelta", "deriv", "predict_linear"]);

interface Window {
  fn: string;
  /** The window's duration expression. */
  node: SyntaxNode;
  seconds: number;
  /** The argument it comes from, when it is one. */
  arg?: string;
}

/** The windows of the range functions of a query, in seconds; a window from `{{judge.*}}` grows with the analysis and is left out. */
function windowsOf(at: QueryAt): Window[] {
  const q = at.parsed;
  return descendants(q.top, "FunctionCall").flatMap((call) => {
    const fn = functionName(q, call);
    const body = call.getChild("FunctionCallBody");
    if (!RANGE_FUNCTIONS.test(fn) || !body) return [];
    return operands(body).flatMap((arg) => {
      const node = arg.name === "MatrixSelector" ? arg.getChild("DurationExpr") : null;
      if (!node) return [];
      const text = textOf(q, node);
      const [p] = placeholdersIn(q, text);
      if (!p) {
        const seconds = promDuration(text);
        return seconds === undefined ? [] : [{ fn, node, seconds }];
      }
      const name = p.name.startsWith("args.") ? p.name.slice("args.".length) : undefined;
      const value = name === undefined ? undefined : at.use.args[name];
      const seconds = value === undefined ? undefined : promDuration(value);
      return seconds === undefined || name === undefined ? [] : [{ fn, node, seconds, arg: name }];
    });
  });
}

const UNITS: Record<string, number> = {
  y: 31_536_000,
  w: 604_800,
  d: 86_400,
  h: 3600,
  m: 60,
  s: 1,
  ms: 0.001,
};

/** A Prometheus duration in seconds (`1m`, `1h30m`, `90s`, `1.5`); undefined for anything else. */
export function promDuration(text: string): number | undefined {
  const t = text.trim();
  if (/^\d+(\.\d+)?$/.test(t)) return Number(t);
  const parts = [...t.matchAll(/(\d+)(ms|y|w|d|h|m|s)/g)];
  if (parts.length === 0 || parts.map((p) => p[0]).join("") !== t) return undefined;
  return parts.reduce((sum, p) => sum + Number(p[1]) * (UNITS[p[2] as string] ?? 0), 0);
}

const show = (w: Window, at: QueryAt) => `${w.fn}(…[${restore(at.parsed, textOf(at.parsed, w.node))}])`;

function scrapeFinding(at: QueryAt, short: readonly Window[], scrape: number): Finding {
  const wanted = formatDuration(Math.ceil(4 * scrape));
  const w = short[0] as Window;
  const fromArg = short.find((x) => x.arg !== undefined);
  const fix = fromArg
    ? `give args.${fromArg.arg} a window of at least ${formatDuration(Math.ceil(2 * scrape))} (${wanted}, four scrape intervals, is Prometheus' advice)`
    : `use windows of four scrape intervals: ${edit(
        at.parsed,
        short.map((x) => ({ from: x.node.from, to: x.node.to, text: wanted })),
      ).trim()}`;
  return finding("window-scrape", "warning", at.where, {
    message: `${queryName(at)}: ${show(w, at)} is a ${formatDuration(w.seconds)} window, shorter than two scrape intervals (2 × ${formatDuration(scrape)}): it can hold fewer than two samples`,
    fix,
  });
}

function delayFinding(
  at: QueryAt,
  w: Window,
  plan: readonly PlanStep[],
  spec: RolloutSpec,
): Finding | undefined {
  const start = at.use.step;
  // The stable version has served all along: only the candidate's windows can be short of it.
  if (at.use.kind === "unused" || start === undefined || at.query.side === "stable") return undefined;
  const served = servedBefore(spec, plan, start);
  const delay = at.metric.metric.initialDelay;
  const name = queryName(at);
  if (!served.traffic) {
    return finding("window-initial-delay", "warning", at.where, {
      message: `${name}: the candidate receives no traffic while this analysis runs (step ${start}, share 0%): ${show(w, at)} measures requests it never served`,
      fix: "run the analysis after a setWeight step, or measure the preview with requests of your own (a web metric)",
    });
  }
  const filled = served.before + delay;
  if (w.seconds <= filled) return undefined;
  const needed = Math.ceil(w.seconds - served.before);
  const history =
    served.before > 0
      ? ` plus ${served.atLeast ? "at least " : ""}${formatDuration(served.before)} since traffic reached it`
      : "";
  return finding("window-initial-delay", "warning", at.where, {
    message: `${name}: ${show(w, at)} averages ${formatDuration(w.seconds)}, but at the first measurement the candidate has served ${formatDuration(filled)} (initialDelay ${formatDuration(delay)}${history})`,
    fix: at.template.source
      ? `initialDelay: ${formatDuration(needed)} on metric "${at.metric.metric.name}" (or a window of at most ${formatDuration(filled)})`
      : `a window of at most ${formatDuration(filled)}: the health block reads from its first interval`,
  });
}

/** Check 4 over every query of the rollout; one finding per query and kind, at its earliest use. */
export function windowFindings(
  queries: readonly QueryAt[],
  spec: RolloutSpec,
  plan: readonly PlanStep[],
  scrapeSeconds: number,
): Finding[] {
  const out: Finding[] = [];
  const seen = new Set<string>();
  const add = (f: Finding | undefined) => {
    const key = f && JSON.stringify([f.id, f.file, f.document, f.path, f.message.split(/[,:]/)[0]]);
    if (!f || !key || seen.has(key)) return;
    seen.add(key);
    out.push(f);
  };
  for (const at of queries) {
    if (at.parsed.syntaxError) continue;
    const windows = windowsOf(at);
    const short = windows.filter((w) => TWO_SAMPLES.has(w.fn) && w.seconds < 2 * scrapeSeconds);
    if (short.length > 0) add(scrapeFinding(at, short, scrapeSeconds));
    for (const w of windows) add(delayFinding(at, w, plan, spec));
  }
  return out;
}
