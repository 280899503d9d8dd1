/**
 * Argo durations: a number of seconds, or a Go-style duration string (`30s`, `5m`, `1h30m`,
 * `500ms`). Returns seconds, or an error message that says what was wrong.
 */
const UNIT_SECONDS: Record<string, number> = { ms: 0.001, s: 1, m: 60, h: 3600 };

export function parseDuration(value: unknown): { seconds: number } | { error: string } {
  if (typeof value === "number") {
    if (!Number.isFinite(value) || value < 0) return { error: `duration must be >= 0, got ${value}` };
    return { seconds: value };
  }
  if (typeof value !== "string")
    return { error: `duration must be a number of seconds or a string like "30s"` };
  const text = value.trim();
  if (/^\d+(\.\d+)?$/.test(text)) return { seconds: Number(text) };
  const re = /(\d+(?:\.\d+)?)(ms|s|m|h)/g;
  let total = 0;
  let consumed = 0;
  for (const match of text.matchAll(re)) {
    if (match.index !== consumed) break;
    total += Number(match[1]) * (UNIT_SECONDS[match[2] ?? "s"] ?? 1);
    consumed += match[0].length;
  }
  if (consumed === 0 || consumed !== text.length) {
    return { error: `invalid duration "${value}": use seconds or a string like "30s", "5m", "1h30m"` };
  }
  return { seconds: total };
}

/** Formats seconds the short way Argo users read them: `30s`, `5m`, `1h30m`, `2.5s`. */
export function formatDuration(seconds: number): string {
  if (seconds < 60 || !Number.isInteger(seconds)) return `${Number(seconds.toFixed(3))}s`;
  const h = Math.floor(seconds / 3600);
  const m = Math.floor((seconds % 3600) / 60);
  const s = seconds % 60;
  return `${h ? `${h}h` : ""}${m ? `${m}m` : ""}${s ? `${s}s` : ""}`;
}
