/**
 * The files the pages need, shipped in this module: one stylesheet and one small script (the
 * dashboard's live refresh), written out here rather than read from files beside it, so that the
 * compiled package, which holds only compiled modules, serves them too. Nothing is fetched from
 * the network and nothing is built. The texts hold no backtick, `${` or backslash.
 */

const STYLESHEET = `/* The dashboard's and the report's one stylesheet: no framework, no web font, no network. */
:root {
  color-scheme: light;
  --fg: #1f2937;
  --muted: #6b7280;
  --line: #e5e7eb;
  --accent: #2f6fdf;
}
* {
  box-sizing: border-box;
}
body {
  margin: 0 auto;
  max-width: 1080px;
  padding: 0 20px 40px;
  font:
    14px / 1.45 system-ui,
    -apple-system,
    "Segoe UI",
    Roboto,
    sans-serif;
  color: var(--fg);
  background: #fff;
}
header h1 {
  font-size: 20px;
  margin: 18px 0 12px;
}
header a,
td.name a {
  color: var(--accent);
  text-decoration: none;
}
h2 {
  font-size: 16px;
  margin: 22px 0 8px;
  border-bottom: 1px solid var(--line);
  padding-bottom: 4px;
}
h3 {
  font-size: 14px;
  margin: 14px 0 6px;
}
h3 small {
  color: var(--muted);
  font-weight: normal;
}
h4 {
  font-size: 13px;
  margin: 12px 0 4px;
}
table {
  border-collapse: collapse;
  width: 100%;
}
th,
td {
  text-align: left;
  padding: 5px 8px;
  border-bottom: 1px solid var(--line);
  vertical-align: top;
}
th {
  font-weight: 600;
  color: var(--muted);
  font-size: 12px;
}
td.message {
  max-width: 520px;
  overflow-wrap: anywhere;
}
.phase {
  display: inline-block;
  padding: 0 7px;
  border-radius: 10px;
  font-size: 12px;
  font-weight: 600;
  white-space: nowrap;
}
.phase.Healthy,
.phase.Successful {
  background: #dcfce7;
  color: #166534;
}
.phase.Progressing,
.phase.Running,
.phase.Pending {
  background: #dbeafe;
  color: #1e40af;
}
.phase.Paused,
.phase.Inconclusive {
  background: #fef3c7;
  color: #92400e;
}
.phase.Degraded,
.phase.Failed {
  background: #fee2e2;
  color: #991b1b;
}
.phase.Error {
  background: #e5e7eb;
  color: #374151;
}
.weight {
  white-space: nowrap;
}
.weight svg.bar {
  vertical-align: middle;
  border-radius: 2px;
}
dl {
  display: grid;
  grid-template-columns: max-content 1fr;
  gap: 4px 16px;
  margin: 0;
}
dt {
  color: var(--muted);
}
dd {
  margin: 0;
  overflow-wrap: anywhere;
}
.status-message {
  font-weight: 600;
}
.actions {
  display: flex;
  gap: 8px;
  margin: 16px 0 4px;
}
.actions form {
  margin: 0;
}
button.action {
  font: inherit;
  padding: 6px 14px;
  border: 1px solid #9ca3af;
  border-radius: 6px;
  background: #f9fafb;
  cursor: pointer;
}
button.action:disabled {
  opacity: 0.45;
  cursor: default;
}
button.action.abort {
  border-color: #dc2626;
  color: #991b1b;
}
button.action.promote,
button.action.promote-full {
  border-color: var(--accent);
  color: #1e40af;
}
.confirm textarea {
  display: block;
  width: 100%;
  max-width: 520px;
  margin: 6px 0 12px;
  font: inherit;
}
.confirm label {
  display: block;
  margin: 8px 0;
}
.notice {
  padding: 8px 12px;
  border-radius: 6px;
  margin: 12px 0;
}
.notice.ok {
  background: #dcfce7;
}
.notice.refused,
.error {
  background: #fee2e2;
  padding: 8px 12px;
  border-radius: 6px;
}
ol.steps {
  list-style: none;
  padding: 0;
  margin: 0;
}
li.step {
  padding: 4px 8px;
  border-left: 3px solid var(--line);
  margin: 2px 0;
}
li.step .index {
  display: inline-block;
  min-width: 2.6em;
  white-space: nowrap;
  color: var(--muted);
}
li.step .did {
  color: var(--muted);
}
li.step.done {
  border-color: #16a34a;
}
li.step.done .index::after {
  content: " ✔";
  color: #16a34a;
}
li.step.current,
li.step.paused {
  border-color: var(--accent);
  background: #eff6ff;
  font-weight: 600;
}
li.step.paused .index::after {
  content: " ॥";
}
li.step.failed {
  border-color: #dc2626;
  background: #fef2f2;
  font-weight: 600;
}
li.step.failed .index::after {
  content: " ✖";
  color: #dc2626;
}
li.step.todo {
  color: var(--muted);
}
svg.chart {
  display: block;
  max-width: 680px;
  margin: 4px 0;
}
article.run {
  border: 1px solid var(--line);
  border-radius: 6px;
  padding: 4px 12px 10px;
  margin: 10px 0;
}
.run-message,
.gate-reason {
  margin: 4px 0;
}
.condition,
.counts {
  margin: 2px 0;
  color: var(--muted);
  font-size: 12px;
}
table.figures {
  width: auto;
  font-size: 12px;
}
table.figures th {
  width: 110px;
}
details.measurements {
  margin: 6px 0;
  font-size: 12px;
}
.no-data {
  color: var(--muted);
}
footer {
  margin-top: 28px;
  color: var(--muted);
  font-size: 12px;
}
`;

const SCRIPT = `// The dashboard's only script: live refresh. It reads the page it is on again every
// data-refresh-ms and swaps in its <main> when it changed. The page works without it (the
// action buttons are plain forms, confirmed on a page of their own). Same origin only: it sends
// no data and runs no text it reads as markup other than the server's own escaped page.

(() => {
  // A page without it (a confirmation, an error) stays as it is.
  const interval = Number(document.body.dataset.refreshMs);
  if (!interval) return;
  const live = () => document.getElementById("live");
  let busy = false;
  async function refresh() {
    if (busy || document.hidden) return;
    busy = true;
    try {
      const response = await fetch(location.pathname, {
        headers: { accept: "text/html" },
        credentials: "same-origin",
        cache: "no-store",
      });
      if (!response.ok) throw new Error("HTTP " + response.status);
      const next = new DOMParser().parseFromString(await response.text(), "text/html");
      const fresh = next.getElementById("view");
      const current = document.getElementById("view");
      if (fresh && current && fresh.innerHTML !== current.innerHTML) {
        // Keep what a person opened (a measurements list) open across the swap.
        const open = new Set(
          [...current.querySelectorAll("details[open]")].map(
            (d) => d.closest("[data-metric]")?.dataset.metric,
          ),
        );
        current.replaceWith(fresh);
        for (const d of fresh.querySelectorAll("details")) {
          if (open.has(d.closest("[data-metric]")?.dataset.metric)) d.open = true;
        }
      }
      const footer = next.querySelector("footer");
      const shown = document.querySelector("footer");
      if (footer && shown) shown.replaceWith(footer);
      document.body.dataset.refreshed = String(Date.now());
    } catch (error) {
      const mark = live();
      if (mark) mark.textContent = "refresh failed (" + error.message + "); retrying";
    } finally {
      busy = false;
    }
  }
  // Notices ("promoted") are shown once: the refreshed page is the plain URL.
  if (location.search) history.replaceState(null, "", location.pathname);
  setInterval(refresh, interval);
})();
`;

export const ASSETS = {
  "dashboard.css": { type: "text/css; charset=utf-8", text: STYLESHEET },
  "dashboard.js": { type: "text/javascript; charset=utf-8", text: SCRIPT },
} as const;
export type AssetName = keyof typeof ASSETS;

export function asset(name: AssetName): string {
  return ASSETS[name].text;
}
