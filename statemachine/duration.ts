import { MAX_WAIT_SECONDS } from "./limits.ts";

/**
 * Argo durations: a number of seconds, a string of digits (seconds, as Argo reads a pause's
 * `duration`), or a Go duration string read exactly as Go's `time.ParseDuration` reads it
 * (`30s`, `1.5h`, `2h45m`, `300ms`, `1h0.5m`, units `ns`, `us`/`µs`, `ms`, `s`, `m`, `h`): what Go
 * accepts is accepted, what it refuses (a missing or unknown unit, spaces, `1d`, a value past Go's
 * largest duration, about 2562047h) is refused with the reason. Negative values, NaN and
 * infinities are refused, and so is a value longer than the field's limit (a year for a wait: no
 * execution lasts longer). Returns seconds, or an error message that says what was wrong.
 */

/** The longest a field's duration may be, and why, for the message. */
export interface DurationLimit {
  seconds: number;
  why: string;
}

/** A wait of a rollout: a pause, an interval, a delay, a bake, a deadline. */
export const WAIT_LIMIT: DurationLimit = {
  seconds: MAX_WAIT_SECONDS,
  why: "a rollout's Step Functions execution lasts at most a year, so a longer wait would never end",
};

const NS_PER_UNIT: Record<string, bigint> = {
  ns: 1n,
  us: 1_000n,
  µs: 1_000n, // U+00B5, the micro sign
  μs: 1_000n, // U+03BC, the Greek letter mu
  ms: 1_000_000n,
  s: 1_000_000_000n,
  m: 60_000_000_000n,
  h: 3_600_000_000_000n,
};

const MAX_INT64 = (1n << 63n) - 1n;
const FORMS = `use seconds or a Go duration like "30s", "1.5h", "2h45m", "300ms"`;

/** Go's `time.ParseDuration`, to nanoseconds (exact, with BigInt) or Go's own error. */
export function parseGoDuration(text: string): { ns: bigint } | { error: string } {
  const invalid = { error: `invalid duration ${JSON.stringify(text)}: ${FORMS}` };
  let s = text;
  let negative = false;
  if (s.startsWith("-") || s.startsWith("+")) {
    negative = s[0] === "-";
    s = s.slice(1);
  }
  if (s === "0") return { ns: 0n };
  if (s === "") return invalid;
  let total = 0n;
  const isDigit = (c: string | undefined) => c !== undefined && c >= "0" && c <= "9";
  while (s !== "") {
    if (!(s[0] === "." || isDigit(s[0]))) return invalid;
    // The whole part, [0-9]*, refused past 2^63 as Go does.
    let i = 0;
    let whole = 0n;
    while (isDigit(s[i])) {
      whole = whole * 10n + BigInt(s.charCodeAt(i) - 48);
      if (whole > 1n << 63n) return overflow(text);
      i++;
    }
    const pre = i > 0;
    s = s.slice(i);
    // The fraction, (\.[0-9]*)?: Go keeps as many digits as fit and scales with a float64.
    let fraction = 0n;
    let scale = 1;
    let post = false;
    if (s.startsWith(".")) {
      s = s.slice(1);
      let j = 0;
      let overflowed = false;
      while (isDigit(s[j])) {
        if (!overflowed) {
          const next = fraction * 10n + BigInt(s.charCodeAt(j) - 48);
          if (fraction > MAX_INT64 / 10n || next > 1n << 63n) overflowed = true;
          else {
            fraction = next;
            scale *= 10;
          }
        }
        j++;
      }
      post = j > 0;
      s = s.slice(j);
    }
    if (!pre && !post) return invalid;
    let u = 0;
    while (u < s.length && !(s[u] === "." || isDigit(s[u]))) u++;
    if (u === 0) return { error: `missing unit in duration ${JSON.stringify(text)}: ${FORMS}` };
    const unitName = s.slice(0, u);
    s = s.slice(u);
    const unit = Object.hasOwn(NS_PER_UNIT, unitName) ? NS_PER_UNIT[unitName] : undefined;
    if (unit === undefined) {
      return {
        error: `unknown unit ${JSON.stringify(unitName)} in duration ${JSON.stringify(text)}: units are ns, us, ms, s, m and h, written without spaces as in "30s", "1.5h", "2h45m" (a day is "24h")`,
      };
    }
    if (whole > (1n << 63n) / unit) return overflow(text);
    let v = whole * unit;
    if (fraction > 0n) {
      v += BigInt(Math.trunc(Number(fraction) * (Number(unit) / scale)));
      if (v > 1n << 63n) return overflow(text);
    }
    total += v;
    if (total > 1n << 63n) return overflow(text);
  }
  if (negative) return { ns: -total };
  if (total > MAX_INT64) return overflow(text);
  return { ns: total };
}

const overflow = (text: string) => ({
  error: `invalid duration ${JSON.stringify(text)}: longer than Go's largest duration (2562047h47m16.854775807s)`,
});

export function parseDuration(
  value: unknown,
  limit: DurationLimit = WAIT_LIMIT,
): { seconds: number } | { error: string } {
  let seconds: number;
  if (typeof value === "number") {
    if (!Number.isFinite(value) || value < 0) {
      return { error: `duration must be a number of seconds >= 0, got ${value}` };
    }
    seconds = value;
  } else if (typeof value === "string") {
    if (/^\d+$/.test(value)) {
      seconds = Number(value);
    } else {
      const parsed = parseGoDuration(value);
      if ("error" in parsed) return parsed;
      if (parsed.ns < 0n) return { error: `duration must be >= 0, got ${JSON.stringify(value)}` };
      seconds = Number(parsed.ns) / 1e9;
    }
  } else {
    return { error: `duration must be a number of seconds or a string like "30s"` };
  }
  if (seconds > limit.seconds) {
    const shown = typeof value === "string" ? JSON.stringify(value) : `${value} seconds`;
    return { error: `duration ${shown} is longer than ${formatDuration(limit.seconds)}: ${limit.why}` };
  }
  return { seconds };
}

/** Formats seconds the short way Argo users read them: `30s`, `5m`, `1h30m`, `2.5s`. */
export function formatDuration(seconds: number): string {
  if (seconds < 60 || !Number.isInteger(seconds)) return `${Number(seconds.toFixed(3))}s`;
  const h = Math.floor(seconds / 3600);
  const m = Math.floor((seconds % 3600) / 60);
  const s = seconds % 60;
  return `${h ? `${h}h` : ""}${m ? `${m}m` : ""}${s ? `${s}s` : ""}`;
}
