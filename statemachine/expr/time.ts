import { own } from "./own.ts";
import { funcOf, type GoType, T } from "./types.ts";
import {
  DURATION_METHODS,
  duration,
  durationString,
  GoFunc,
  GoValue,
  isDurationValue,
  panic,
  TypedInt,
} from "./values.ts";

/**
 * Go's `time` package as far as expressions use it: `now()`, `date()`, `duration()`,
 * `timezone()`, comparisons and arithmetic on times and durations, and their common methods
 * (`date(x).Hour()`, `duration("1h").Seconds()`). A time is nanoseconds since the Unix epoch and a
 * location; a duration is an int64 of nanoseconds (a {@link TypedInt} of `time.Duration`).
 */

export class Location extends GoValue {
  readonly goType = T.location;
  constructor(
    readonly name: string,
    /** A fixed zone (from a parsed `-0700`): seconds east of UTC. */
    readonly fixedOffset?: number,
  ) {
    super();
  }

  format(): string {
    return this.name;
  }

  override equals(other: GoValue): boolean {
    return other instanceof Location && other.name === this.name;
  }

  override method(name: string): GoFunc | undefined {
    return name === "String" ? new GoFunc(LOCATION_SIGS.String as GoType, () => this.name, false) : undefined;
  }

  /** Seconds east of UTC at this instant, and the zone's abbreviation. */
  zone(ms: number): { offset: number; abbr: string } {
    if (this.fixedOffset !== undefined) return { offset: this.fixedOffset, abbr: "" };
    if (this.name === "UTC" || this.name === "Local") return { offset: 0, abbr: "UTC" };
    const parts = new Intl.DateTimeFormat("en-US", {
      timeZone: this.name,
      hourCycle: "h23",
      year: "numeric",
      month: "2-digit",
      day: "2-digit",
      hour: "2-digit",
      minute: "2-digit",
      second: "2-digit",
      timeZoneName: "short",
    }).formatToParts(new Date(ms));
    const get = (t: string) => Number(parts.find((p) => p.type === t)?.value);
    const local = Date.UTC(
      get("year"),
      get("month") - 1,
      get("day"),
      get("hour"),
      get("minute"),
      get("second"),
    );
    const offset = Math.round((local - Math.floor(ms / 1000) * 1000) / 1000);
    const abbr = parts.find((p) => p.type === "timeZoneName")?.value ?? "";
    return { offset, abbr: /^GMT[+-]/.test(abbr) ? formatOffsetAbbr(offset) : abbr };
  }
}

function formatOffsetAbbr(offset: number): string {
  const sign = offset < 0 ? "-" : "+";
  const a = Math.abs(offset);
  const h = Math.floor(a / 3600);
  const m = Math.floor((a % 3600) / 60);
  return m ? `${sign}${pad(h, 2)}${pad(m, 2)}` : `${sign}${pad(h, 2)}`;
}

export const UTC = new Location("UTC");

/** Go's `time.LoadLocation`. */
export function loadLocation(name: string): Location {
  if (name === "" || name === "UTC") return UTC;
  if (name === "Local") return new Location("Local");
  try {
    new Intl.DateTimeFormat("en-US", { timeZone: name });
  } catch {
    return panic(`unknown time zone ${name}`);
  }
  return new Location(name);
}

const NS_PER_MS = 1_000_000n;

export class GoTime extends GoValue {
  readonly goType = T.time;
  constructor(
    /** Nanoseconds since 1970-01-01T00:00:00Z. */
    readonly ns: bigint,
    readonly loc: Location = UTC,
  ) {
    super();
  }

  override equals(other: GoValue): boolean {
    return other instanceof GoTime && other.ns === this.ns;
  }

  override compare(other: GoValue): number | undefined {
    if (!(other instanceof GoTime)) return undefined;
    return this.ns < other.ns ? -1 : this.ns > other.ns ? 1 : 0;
  }

  override arith(op: string, other: unknown, right: boolean): unknown {
    if (op === "+" && isDurationValue(other)) return this.add(other.value);
    if (op === "-" && !right && isDurationValue(other)) return this.add(-other.value);
    if (op === "-" && other instanceof GoTime)
      return duration(right ? other.ns - this.ns : this.ns - other.ns);
    return undefined;
  }

  override method(name: string): GoFunc | undefined {
    return timeMethod(this, name);
  }

  /** The instant `ms` milliseconds after the Unix epoch, in UTC (what `now()` answers). */
  static at(ms: number): GoTime {
    return new GoTime(BigInt(Math.trunc(ms)) * NS_PER_MS);
  }

  add(ns: bigint): GoTime {
    return new GoTime(this.ns + ns, this.loc);
  }

  /** Calendar fields in this time's location. */
  fields(): {
    year: number;
    month: number;
    day: number;
    hour: number;
    minute: number;
    second: number;
    nano: number;
    weekday: number;
    yday: number;
    offset: number;
    abbr: string;
  } {
    const ms = Number(floorDiv(this.ns, NS_PER_MS));
    const { offset, abbr } = this.loc.zone(ms);
    const d = new Date(Number(floorDiv(this.ns, 1_000_000_000n)) * 1000 + offset * 1000);
    const start = Date.UTC(d.getUTCFullYear(), 0, 1);
    return {
      year: d.getUTCFullYear(),
      month: d.getUTCMonth() + 1,
      day: d.getUTCDate(),
      hour: d.getUTCHours(),
      minute: d.getUTCMinutes(),
      second: d.getUTCSeconds(),
      nano: Number(floorMod(this.ns, 1_000_000_000n)),
      weekday: d.getUTCDay(),
      yday: Math.floor((d.getTime() - start) / 86_400_000) + 1,
      offset,
      abbr,
    };
  }

  /** Go's `Time.String()`: `2023-08-14 09:00:00 +0000 UTC`. */
  format(): string {
    return this.layout("2006-01-02 15:04:05.999999999 -0700 MST");
  }

  layout(layout: string): string {
    const f = this.fields();
    let out = "";
    for (const part of layoutParts(layout)) {
      out += part.literal !== undefined ? part.literal : formatElement(part.element as string, f);
    }
    return out;
  }
}

function floorDiv(a: bigint, b: bigint): bigint {
  const q = a / b;
  return a % b !== 0n && a < 0n !== b < 0n ? q - 1n : q;
}

function floorMod(a: bigint, b: bigint): bigint {
  return a - floorDiv(a, b) * b;
}

function pad(n: number, width: number): string {
  return String(Math.abs(n)).padStart(width, "0");
}

const MONTHS = [
  "January",
  "February",
  "March",
  "April",
  "May",
  "June",
  "July",
  "August",
  "September",
  "October",
  "November",
  "December",
];
const DAYS = ["Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"];

/** The elements of Go's reference layout, longest first where one is a prefix of another. */
const ELEMENTS = [
  "January",
  "Monday",
  "2006",
  "Jan",
  "Mon",
  "MST",
  "Z07:00:00",
  "-07:00:00",
  "Z070000",
  "-070000",
  "Z07:00",
  "-07:00",
  "Z0700",
  "-0700",
  "Z07",
  "-07",
  "002",
  "__2",
  "_2",
  "01",
  "02",
  "03",
  "04",
  "05",
  "06",
  "15",
  "PM",
  "pm",
  "1",
  "2",
  "3",
  "4",
  "5",
];

interface LayoutPart {
  literal?: string;
  element?: string;
}

function layoutParts(layout: string): LayoutPart[] {
  const parts: LayoutPart[] = [];
  let literal = "";
  let i = 0;
  while (i < layout.length) {
    const frac = /^[.,](0+|9+)(?![0-9])/.exec(layout.slice(i));
    if (frac) {
      if (literal) parts.push({ literal });
      literal = "";
      parts.push({ element: frac[0] });
      i += frac[0].length;
      continue;
    }
    const el = ELEMENTS.find((e) => layout.startsWith(e, i));
    if (el) {
      if (literal) parts.push({ literal });
      literal = "";
      parts.push({ element: el });
      i += el.length;
      continue;
    }
    literal += layout[i];
    i++;
  }
  if (literal) parts.push({ literal });
  return parts;
}

type Fields = ReturnType<GoTime["fields"]>;

function formatElement(el: string, f: Fields): string {
  const h12 = f.hour % 12 === 0 ? 12 : f.hour % 12;
  switch (el) {
    case "2006":
      return pad(f.year, 4);
    case "06":
      return pad(f.year % 100, 2);
    case "01":
      return pad(f.month, 2);
    case "1":
      return String(f.month);
    case "January":
      return MONTHS[f.month - 1] as string;
    case "Jan":
      return (MONTHS[f.month - 1] as string).slice(0, 3);
    case "02":
      return pad(f.day, 2);
    case "2":
      return String(f.day);
    case "_2":
      return String(f.day).padStart(2, " ");
    case "002":
      return pad(f.yday, 3);
    case "__2":
      return String(f.yday).padStart(3, " ");
    case "15":
      return pad(f.hour, 2);
    case "03":
      return pad(h12, 2);
    case "3":
      return String(h12);
    case "04":
      return pad(f.minute, 2);
    case "4":
      return String(f.minute);
    case "05":
      return pad(f.second, 2);
    case "5":
      return String(f.second);
    case "PM":
      return f.hour >= 12 ? "PM" : "AM";
    case "pm":
      return f.hour >= 12 ? "pm" : "am";
    case "Monday":
      return DAYS[f.weekday] as string;
    case "Mon":
      return (DAYS[f.weekday] as string).slice(0, 3);
    case "MST":
      return f.abbr || formatOffsetAbbr(f.offset);
  }
  if (/^[.,](0+|9+)$/.test(el)) {
    const digits = el.length - 1;
    const s = String(f.nano).padStart(9, "0").slice(0, digits);
    if (el[1] === "0") return el[0] + s;
    const trimmed = s.replace(/0+$/, "");
    return trimmed ? el[0] + trimmed : "";
  }
  // Zone offsets.
  const z = el.startsWith("Z");
  if (z && f.offset === 0) return "Z";
  const sign = f.offset < 0 ? "-" : "+";
  const a = Math.abs(f.offset);
  const hh = pad(Math.floor(a / 3600), 2);
  const mm = pad(Math.floor((a % 3600) / 60), 2);
  const ss = pad(a % 60, 2);
  const shape = el.replace(/^Z/, "-");
  switch (shape) {
    case "-07":
      return `${sign}${hh}`;
    case "-0700":
      return `${sign}${hh}${mm}`;
    case "-07:00":
      return `${sign}${hh}:${mm}`;
    case "-070000":
      return `${sign}${hh}${mm}${ss}`;
    default:
      return `${sign}${hh}:${mm}:${ss}`;
  }
}

/** Go's `time.ParseInLocation` for the layout elements above; errors are Go's. */
export function parseTime(layout: string, value: string, loc: Location = UTC): GoTime {
  const parse = new TimeParse(layout, value);
  const parts = layoutParts(layout);
  for (let p = 0; p < parts.length; p++) {
    const part = parts[p] as LayoutPart;
    if (part.literal !== undefined) parse.literal(part.literal);
    else parse.element(part.element as string, parts[p + 1]?.element ?? "");
  }
  parse.finish();
  return parse.instant(loc);
}

/**
 * One parse of a value against a layout: what is left of the value, and the fields read so far
 * (Go's defaults where the layout has none). Each family of layout elements reads its own fields.
 */
class TimeParse {
  private rest: string;
  private year = 1;
  private month = 1;
  private day = 1;
  private hour = 0;
  private minute = 0;
  private second = 0;
  private nano = 0;
  private pm: boolean | undefined;
  private offset: number | undefined;

  constructor(
    private readonly layout: string,
    private readonly value: string,
  ) {
    this.rest = value;
  }

  /** Fails as Go does when what is left of the value does not fit `elem`. */
  private fail(elem: string): never {
    const { layout, value, rest } = this;
    return panic(
      `parsing time ${JSON.stringify(value)} as ${JSON.stringify(layout)}: cannot parse ${JSON.stringify(rest)} as ${JSON.stringify(elem)}`,
    );
  }

  /** Reads a number of `min` to `max` digits (exactly `min` when `fixed`) for `elem`. */
  private num(elem: string, min: number, max: number, fixed: boolean): number {
    const m = (fixed ? new RegExp(`^\\d{${min}}`) : new RegExp(`^\\d{${min},${max}}`)).exec(this.rest);
    if (!m) return this.fail(elem);
    this.rest = this.rest.slice(m[0].length);
    return Number(m[0]);
  }

  /** The layout's literal text, which the value must repeat. */
  literal(text: string): void {
    if (!this.rest.startsWith(text)) this.fail(text);
    this.rest = this.rest.slice(text.length);
  }

  /**
   * A layout element: the date's (year, month, weekday, day) here, the clock's and the zone's in
   * `clockElement`; `next` is the element after it, which decides whether seconds take a fraction.
   */
  element(el: string, next: string): void {
    switch (el) {
      case "2006":
        this.year = this.num(el, 4, 4, true);
        break;
      case "06":
        this.year = this.num(el, 2, 2, true);
        this.year += this.year >= 69 ? 1900 : 2000;
        break;
      case "01":
        this.month = this.num(el, 2, 2, true);
        break;
      case "1":
        this.month = this.num(el, 1, 2, false);
        break;
      case "January":
      case "Jan":
        this.monthName(el);
        break;
      case "Monday":
      case "Mon":
        this.weekdayName(el);
        break;
      case "02":
        this.day = this.num(el, 2, 2, true);
        break;
      case "_2":
        if (this.rest.startsWith(" ")) this.rest = this.rest.slice(1);
        this.day = this.num(el, 1, 2, false);
        break;
      case "2":
        this.day = this.num(el, 1, 2, false);
        break;
      default:
        this.clockElement(el, next);
    }
  }

  /** The elements of the time of day, then those of the zone. */
  private clockElement(el: string, next: string): void {
    switch (el) {
      case "15":
      case "3":
        this.hour = this.num(el, 1, 2, false);
        break;
      case "03":
        this.hour = this.num(el, 2, 2, true);
        break;
      case "04":
        this.minute = this.num(el, 2, 2, true);
        break;
      case "4":
        this.minute = this.num(el, 1, 2, false);
        break;
      case "05":
      case "5":
        this.seconds(el, next);
        break;
      case "PM":
      case "pm": {
        const m = /^(AM|PM|am|pm)/.exec(this.rest);
        if (!m) this.fail(el);
        this.pm = m[0].toUpperCase() === "PM";
        this.rest = this.rest.slice(2);
        break;
      }
      case "MST": {
        const m = /^(UTC|GMT|[A-Z]{3,5})/.exec(this.rest);
        if (!m) this.fail(el);
        this.rest = this.rest.slice(m[0].length);
        break;
      }
      default:
        if (/^[.,](0+|9+)$/.test(el)) this.fraction(el);
        else this.zoneOffset(el);
    }
  }

  /** `January` or `Jan`, in any case. */
  private monthName(el: string): void {
    const names = el === "Jan" ? MONTHS.map((m) => m.slice(0, 3)) : MONTHS;
    const k = names.findIndex((m) => this.rest.toLowerCase().startsWith(m.toLowerCase()));
    if (k < 0) this.fail(el);
    this.month = k + 1;
    this.rest = this.rest.slice((names[k] as string).length);
  }

  /** `Monday` or `Mon`, in any case: read, and not checked against the date, as in Go. */
  private weekdayName(el: string): void {
    const names = el === "Mon" ? DAYS.map((d) => d.slice(0, 3)) : DAYS;
    const k = names.findIndex((d) => this.rest.toLowerCase().startsWith(d.toLowerCase()));
    if (k < 0) this.fail(el);
    this.rest = this.rest.slice((names[k] as string).length);
  }

  /** `05` or `5`, and a fraction right after the seconds even when the layout has none, as Go accepts. */
  private seconds(el: string, next: string): void {
    this.second = el === "05" ? this.num(el, 2, 2, true) : this.num(el, 1, 2, false);
    const frac = /^[.,](\d+)/.exec(this.rest);
    if (frac && !/^[.,](0+|9+)$/.test(next)) {
      this.nano = Number((frac[1] as string).slice(0, 9).padEnd(9, "0"));
      this.rest = this.rest.slice(frac[0].length);
    }
  }

  /** `.000` or `.999` (or with a comma): a fraction of a second, which `9`s may leave out. */
  private fraction(el: string): void {
    const m = /^[.,](\d+)/.exec(this.rest);
    if (!m) {
      if (el[1] === "9") return;
      this.fail(el);
    }
    this.nano = Number(m[1]?.slice(0, 9).padEnd(9, "0"));
    this.rest = this.rest.slice(m[0].length);
  }

  /** A zone offset (`-07:00`, `Z0700`...); the `Z` forms also take `Z` for UTC. */
  private zoneOffset(el: string): void {
    if (el.startsWith("Z") && this.rest.startsWith("Z")) {
      this.rest = this.rest.slice(1);
      this.offset = 0;
      return;
    }
    const shape = el.replace(/^Z/, "-");
    const re =
      shape === "-07"
        ? /^([+-])(\d\d)/
        : shape === "-0700"
          ? /^([+-])(\d\d)(\d\d)/
          : shape === "-07:00"
            ? /^([+-])(\d\d):(\d\d)/
            : shape === "-070000"
              ? /^([+-])(\d\d)(\d\d)(\d\d)/
              : /^([+-])(\d\d):(\d\d):(\d\d)/;
    const m = re.exec(this.rest);
    if (!m) this.fail(el);
    const secs = Number(m[2]) * 3600 + Number(m[3] ?? 0) * 60 + Number(m[4] ?? 0);
    this.offset = m[1] === "-" ? -secs : secs;
    this.rest = this.rest.slice(m[0].length);
  }

  /** Checks that nothing is left of the value and that each field is in its range, in Go's order. */
  finish(): void {
    const quoted = JSON.stringify(this.value);
    if (this.rest !== "") panic(`parsing time ${quoted}: extra text: ${JSON.stringify(this.rest)}`);
    if (this.pm !== undefined) {
      if (this.pm && this.hour < 12) this.hour += 12;
      else if (!this.pm && this.hour === 12) this.hour = 0;
    }
    const { year, month, day, hour, minute, second } = this;
    if (month < 1 || month > 12) panic(`parsing time ${quoted}: month out of range`);
    const daysIn = new Date(Date.UTC(year, month, 0)).getUTCDate();
    if (day < 1 || day > daysIn) panic(`parsing time ${quoted}: day out of range`);
    if (hour > 23) panic(`parsing time ${quoted}: hour out of range`);
    if (minute > 59) panic(`parsing time ${quoted}: minute out of range`);
    if (second > 59) panic(`parsing time ${quoted}: second out of range`);
  }

  /**
   * The instant the fields name: at the value's offset, in `loc` when `loc` has that offset then,
   * or else in `loc`'s own offset at that wall time.
   */
  instant(loc: Location): GoTime {
    const d = new Date(0);
    d.setUTCFullYear(this.year, this.month - 1, this.day);
    d.setUTCHours(this.hour, this.minute, this.second, 0);
    let ns = BigInt(d.getTime()) * NS_PER_MS + BigInt(this.nano);
    const offset = this.offset;
    if (offset !== undefined) {
      ns -= BigInt(offset) * 1_000_000_000n;
      // Go keeps the location when it has this offset at that instant, else a fixed zone.
      const zone =
        loc.zone(Number(ns / NS_PER_MS)).offset === offset
          ? loc
          : offset === 0
            ? UTC
            : new Location("", offset);
      return new GoTime(ns, zone);
    }
    const guess = loc.zone(Number(ns / NS_PER_MS)).offset;
    ns -= BigInt(guess) * 1_000_000_000n;
    const actual = loc.zone(Number(ns / NS_PER_MS)).offset;
    if (actual !== guess) ns -= BigInt(actual - guess) * 1_000_000_000n;
    return new GoTime(ns, loc);
  }
}

const UNITS: Record<string, bigint> = {
  ns: 1n,
  us: 1_000n,
  µs: 1_000n,
  μs: 1_000n,
  ms: 1_000_000n,
  s: 1_000_000_000n,
  m: 60_000_000_000n,
  h: 3_600_000_000_000n,
};

/** Go's `time.ParseDuration`. */
export function parseDuration(s: string): TypedInt {
  const quoted = JSON.stringify(s);
  let rest = s;
  let neg = false;
  if (rest.startsWith("-") || rest.startsWith("+")) {
    neg = rest[0] === "-";
    rest = rest.slice(1);
  }
  if (rest === "0") return duration(0n);
  if (rest === "") panic(`time: invalid duration ${quoted}`);
  let total = 0n;
  while (rest !== "") {
    const m = /^(\d*)(?:\.(\d*))?/.exec(rest) as RegExpExecArray;
    if ((m[1] ?? "") === "" && (m[2] ?? "") === "") panic(`time: invalid duration ${quoted}`);
    rest = rest.slice(m[0].length);
    const u = /^[^\d.]+/.exec(rest);
    if (!u) panic(`time: missing unit in duration ${quoted}`);
    const unit = UNITS[(u as RegExpExecArray)[0]];
    if (unit === undefined)
      panic(`time: unknown unit ${JSON.stringify((u as RegExpExecArray)[0])} in duration ${quoted}`);
    rest = rest.slice((u as RegExpExecArray)[0].length);
    let v = BigInt(m[1] || "0") * (unit as bigint);
    const frac = m[2] ?? "";
    if (frac) v += (BigInt(frac) * (unit as bigint)) / 10n ** BigInt(frac.length);
    total += v;
    if (total > 9223372036854775807n) panic(`time: invalid duration ${quoted}`);
  }
  return duration(neg ? -total : total);
}

const INT64 = T.int64;

function method(type: GoType, call: (args: unknown[]) => unknown): GoFunc {
  return new GoFunc(type, call, false);
}

function asTime(v: unknown): GoTime {
  if (!(v instanceof GoTime)) panic(`reflect: Call using ${v === null ? "zero Value" : typeof v} argument`);
  return v as GoTime;
}

function asDuration(v: unknown): bigint {
  if (isDurationValue(v)) return v.value;
  if (typeof v === "bigint") return v;
  return panic("reflect: Call using argument of the wrong type as type time.Duration");
}

/** Method types, for the checker. */
export function timeMethodType(receiver: GoType, name: string): GoType | undefined {
  if (receiver === T.time) return own(TIME_SIGS, name);
  if (receiver === T.duration) return own(DURATION_SIGS, name);
  if (receiver === T.location) return own(LOCATION_SIGS, name);
  return undefined;
}

const TIME_SIGS: Record<string, GoType> = {
  Year: funcOf([], [T.int]),
  Month: funcOf([], [T.int]),
  Day: funcOf([], [T.int]),
  Hour: funcOf([], [T.int]),
  Minute: funcOf([], [T.int]),
  Second: funcOf([], [T.int]),
  Nanosecond: funcOf([], [T.int]),
  YearDay: funcOf([], [T.int]),
  Weekday: funcOf([], [T.int]),
  Unix: funcOf([], [INT64]),
  UnixMilli: funcOf([], [INT64]),
  UnixMicro: funcOf([], [INT64]),
  UnixNano: funcOf([], [INT64]),
  Format: funcOf([T.string], [T.string]),
  String: funcOf([], [T.string]),
  Sub: funcOf([T.time], [T.duration]),
  Add: funcOf([T.duration], [T.time]),
  AddDate: funcOf([T.int, T.int, T.int], [T.time]),
  Before: funcOf([T.time], [T.bool]),
  After: funcOf([T.time], [T.bool]),
  Equal: funcOf([T.time], [T.bool]),
  IsZero: funcOf([], [T.bool]),
  UTC: funcOf([], [T.time]),
  Local: funcOf([], [T.time]),
  In: funcOf([T.location], [T.time]),
  Location: funcOf([], [T.location]),
  Truncate: funcOf([T.duration], [T.time]),
  Round: funcOf([T.duration], [T.time]),
};

const DURATION_SIGS: Record<string, GoType> = {
  Hours: funcOf([], [T.float64]),
  Minutes: funcOf([], [T.float64]),
  Seconds: funcOf([], [T.float64]),
  Milliseconds: funcOf([], [INT64]),
  Microseconds: funcOf([], [INT64]),
  Nanoseconds: funcOf([], [INT64]),
  String: funcOf([], [T.string]),
  Round: funcOf([T.duration], [T.duration]),
  Truncate: funcOf([T.duration], [T.duration]),
  Abs: funcOf([], [T.duration]),
};

const LOCATION_SIGS: Record<string, GoType> = {
  String: funcOf([], [T.string]),
};

const ZERO_TIME = -62135596800n * 1_000_000_000n;

function timeMethod(v: GoTime, name: string): GoFunc | undefined {
  {
    const sig = own(TIME_SIGS, name);
    if (!sig) return undefined;
    const f = () => v.fields();
    const int64 = (x: bigint) => new TypedInt(x, INT64);
    const impl: Record<string, (a: unknown[]) => unknown> = {
      Year: () => BigInt(f().year),
      Month: () => BigInt(f().month),
      Day: () => BigInt(f().day),
      Hour: () => BigInt(f().hour),
      Minute: () => BigInt(f().minute),
      Second: () => BigInt(f().second),
      Nanosecond: () => BigInt(f().nano),
      YearDay: () => BigInt(f().yday),
      Weekday: () => BigInt(f().weekday),
      Unix: () => int64(floorDiv(v.ns, 1_000_000_000n)),
      UnixMilli: () => int64(floorDiv(v.ns, NS_PER_MS)),
      UnixMicro: () => int64(floorDiv(v.ns, 1_000n)),
      UnixNano: () => int64(v.ns),
      Format: ([layout]) => v.layout(String(layout)),
      String: () => v.format(),
      Sub: ([u]) => duration(v.ns - asTime(u).ns),
      Add: ([d]) => v.add(asDuration(d)),
      AddDate: ([y, m, d]) => {
        const x = f();
        const date = new Date(
          Date.UTC(
            x.year + Number(y),
            x.month - 1 + Number(m),
            x.day + Number(d),
            x.hour,
            x.minute,
            x.second,
          ),
        );
        return new GoTime(BigInt(date.getTime() - x.offset * 1000) * NS_PER_MS + BigInt(x.nano), v.loc);
      },
      Before: ([u]) => v.ns < asTime(u).ns,
      After: ([u]) => v.ns > asTime(u).ns,
      Equal: ([u]) => v.ns === asTime(u).ns,
      IsZero: () => v.ns === ZERO_TIME,
      UTC: () => new GoTime(v.ns, UTC),
      Local: () => new GoTime(v.ns, new Location("Local")),
      In: ([l]) => new GoTime(v.ns, l as Location),
      Location: () => v.loc,
      Truncate: ([d]) => {
        const step = asDuration(d);
        return step <= 0n ? v : new GoTime(v.ns - floorMod(v.ns - ZERO_TIME, step), v.loc);
      },
      Round: ([d]) => {
        const step = asDuration(d);
        if (step <= 0n) return v;
        const r = floorMod(v.ns - ZERO_TIME, step);
        return new GoTime(r + r < step ? v.ns - r : v.ns + step - r, v.loc);
      },
    };
    return method(sig, impl[name] as (a: unknown[]) => unknown);
  }
}

DURATION_METHODS.get = (v: TypedInt, name: string): GoFunc | undefined => {
  {
    const sig = own(DURATION_SIGS, name);
    if (!sig) return undefined;
    const d = v.value;
    const split = (unit: bigint) => Number(d / unit) + Number(d % unit) / Number(unit);
    const impl: Record<string, (a: unknown[]) => unknown> = {
      Hours: () => split(3_600_000_000_000n),
      Minutes: () => split(60_000_000_000n),
      Seconds: () => split(1_000_000_000n),
      Milliseconds: () => new TypedInt(d / 1_000_000n, INT64),
      Microseconds: () => new TypedInt(d / 1_000n, INT64),
      Nanoseconds: () => new TypedInt(d, INT64),
      String: () => durationString(d),
      Round: ([m]) => {
        const step = asDuration(m);
        if (step <= 0n) return v;
        let r = d % step;
        if (d < 0n) {
          r = -r;
          return duration(r + r < step ? d + r : d + r - step);
        }
        return duration(r + r < step ? d - r : d + step - r);
      },
      Truncate: ([m]) => {
        const step = asDuration(m);
        return step <= 0n ? v : duration(d - (d % step));
      },
      Abs: () => duration(d < 0n ? -d : d),
    };
    return method(sig, impl[name] as (a: unknown[]) => unknown);
  }
};
