import { type Html, html, raw } from "./html.ts";

/**
 * Inline SVG charts, drawn on the server: the page needs no script and no library to show them,
 * and the report file carries them as they are. Each chart lists its values in `data-` attributes
 * too, so what it draws can be checked without reading coordinates.
 */

/** A point of a series: `x` epoch ms; `phase` colours a measurement by its verdict. */
export interface Point {
  x: number;
  y: number;
  phase?: string;
  /** A tooltip. */
  label?: string;
}

export interface Series {
  name: string;
  /** `candidate`, `stable`, `value`, `weight`, `pvalue`: the CSS class and the default colour. */
  kind: "candidate" | "stable" | "value" | "weight" | "pvalue";
  points: Point[];
  /** A step line (the weight holds until the next change) rather than segments between points. */
  step?: boolean;
}

export interface ChartOptions {
  /** What the chart shows, for a screen reader (`aria-label`). */
  title: string;
  series: Series[];
  /** Horizontal lines: a condition's threshold, a gate's alpha. */
  rules?: Array<{ y: number; label: string }>;
  /** The y range; default the data's, widened to include the rules. */
  yMin?: number;
  yMax?: number;
  /** The x range, epoch ms; default the data's. */
  xMin?: number;
  xMax?: number;
  format?: (y: number) => string;
}

const WIDTH = 640;
const HEIGHT = 180;
const LEFT = 56;
const RIGHT = 12;
const TOP = 10;
const BOTTOM = 24;

/** Colours by series kind and by measurement phase (presentation attributes: no stylesheet needed). */
const SERIES_COLOUR: Record<Series["kind"], string> = {
  weight: "#2f6fdf",
  value: "#555d66",
  candidate: "#c2410c",
  stable: "#2f6fdf",
  pvalue: "#7c3aed",
};

export const PHASE_COLOUR: Record<string, string> = {
  Successful: "#15803d",
  Failed: "#dc2626",
  Error: "#6b7280",
  Inconclusive: "#d97706",
  Running: "#2563eb",
};

/** `12:00:05` (UTC): a chart spans minutes, the page says the date elsewhere. */
function clock(ms: number): string {
  return new Date(ms).toISOString().slice(11, 19);
}

function number(y: number): string {
  if (y === 0) return "0";
  const abs = Math.abs(y);
  if (abs >= 1000 || abs < 0.001) return y.toExponential(2);
  return String(Number(y.toPrecision(4)));
}

/** A line chart of time against values, with optional horizontal rules. */
export function lineChart(options: ChartOptions): Html {
  const all = options.series.flatMap((s) => s.points);
  const format = options.format ?? number;
  if (all.length === 0) return html`<p class="no-data">No data yet.</p>`;
  const xs = all.map((p) => p.x);
  const ys = [...all.map((p) => p.y), ...(options.rules ?? []).map((r) => r.y)];
  const xMin = options.xMin ?? Math.min(...xs);
  let xMax = options.xMax ?? Math.max(...xs);
  if (xMax <= xMin) xMax = xMin + 1000;
  let yMin = options.yMin ?? Math.min(...ys);
  let yMax = options.yMax ?? Math.max(...ys);
  if (yMax <= yMin) {
    const pad = Math.abs(yMax) > 0 ? Math.abs(yMax) * 0.1 : 1;
    yMin -= pad;
    yMax += pad;
  }
  const px = (x: number) => LEFT + ((x - xMin) / (xMax - xMin)) * (WIDTH - LEFT - RIGHT);
  const py = (y: number) => TOP + (1 - (y - yMin) / (yMax - yMin)) * (HEIGHT - TOP - BOTTOM);
  const at = (n: number) => n.toFixed(1);

  const grid = [yMin, (yMin + yMax) / 2, yMax].map(
    (y) =>
      html`<line x1="${LEFT}" x2="${WIDTH - RIGHT}" y1="${at(py(y))}" y2="${at(py(y))}" stroke="#e5e7eb"/><text x="${LEFT - 6}" y="${at(py(y) + 4)}" text-anchor="end" font-size="11" fill="#6b7280">${format(y)}</text>`,
  );
  const xLabels = html`<text x="${LEFT}" y="${HEIGHT - 6}" font-size="11" fill="#6b7280">${clock(xMin)}</text><text x="${WIDTH - RIGHT}" y="${HEIGHT - 6}" text-anchor="end" font-size="11" fill="#6b7280">${clock(xMax)}</text>`;
  const rules = (options.rules ?? []).map(
    (r) =>
      html`<g class="rule" data-y="${r.y}"><line x1="${LEFT}" x2="${WIDTH - RIGHT}" y1="${at(py(r.y))}" y2="${at(py(r.y))}" stroke="#dc2626" stroke-dasharray="5 4"/><text x="${WIDTH - RIGHT - 4}" y="${at(py(r.y) - 4)}" text-anchor="end" font-size="11" fill="#dc2626">${r.label}</text></g>`,
  );
  const lines = options.series.map((s) => {
    const colour = SERIES_COLOUR[s.kind];
    const coords: string[] = [];
    s.points.forEach((p, i) => {
      const prev = s.points[i - 1];
      if (s.step && prev) coords.push(`${at(px(p.x))},${at(py(prev.y))}`);
      coords.push(`${at(px(p.x))},${at(py(p.y))}`);
    });
    const dots = s.points.map(
      (p) =>
        html`<circle cx="${at(px(p.x))}" cy="${at(py(p.y))}" r="3.5" fill="${(p.phase && PHASE_COLOUR[p.phase]) || colour}"${p.phase ? html` data-phase="${p.phase}"` : ""}><title>${p.label ?? `${clock(p.x)}  ${format(p.y)}`}</title></circle>`,
    );
    return html`<g class="series ${s.kind}" data-name="${s.name}" data-values="${s.points.map((p) => p.y).join(" ")}"><polyline fill="none" stroke="${colour}" stroke-width="2" points="${raw(coords.join(" "))}"/>${dots}</g>`;
  });
  const legend =
    options.series.length > 1
      ? html`<g class="legend">${options.series.map(
          (s, i) =>
            html`<rect x="${WIDTH / 2 - 90 + i * 110}" y="${HEIGHT - 15}" width="10" height="10" fill="${SERIES_COLOUR[s.kind]}"/><text x="${WIDTH / 2 - 76 + i * 110}" y="${HEIGHT - 6}" font-size="11" fill="#374151">${s.name}</text>`,
        )}</g>`
      : "";
  return html`<svg class="chart" role="img" aria-label="${options.title}" viewBox="0 0 ${WIDTH} ${HEIGHT}" width="100%" preserveAspectRatio="xMidYMid meet" xmlns="http://www.w3.org/2000/svg">${grid}${xLabels}${rules}${lines}${legend}</svg>`;
}
