import { parseGoDuration } from "../../statemachine/duration.ts";
import { goParseFloat, goParseInt } from "../../statemachine/expr/builtins.ts";
import { parseTime } from "../../statemachine/expr/time.ts";
import { goFloatV } from "./go-fmt.ts";

/**
 * InfluxDB's annotated CSV (the v2 query API's answer with the `datatype`, `group` and `default`
 * annotations), read as influxdb-client-go's `QueryTableResult.Next` reads it, one record after
 * another, and each record's `_value` as `Record().Value()` gives it. Argo reads records while
 * `Next()` is true and never looks at `Err()`, so a parsing error, a value that does not convert or
 * a Flux error table simply ends the records: those read before it are the result.
 */

/** A `_value` as the client decodes it: the condition's value and Go's `%v` of it. */
export interface FluxValue {
  /** What a condition sees: a number, a string, a boolean or null. */
  value: number | string | boolean | null;
  /** `fmt.Sprint` of the Go value: `6.6`, `10`, `2020-02-18 10:34:08.135814545 +0000 UTC`, `<nil>`. */
  printed: string;
}

/** The `_value` of every record, until the end or the first problem. */
export function fluxValues(text: string): { values: FluxValue[]; stoppedBy?: string } {
  const rows = csvRows(text);
  const values: FluxValue[] = [];
  let table: Column[] | undefined;
  let last: FluxValue | undefined;
  let i = 0;
  const stop = (why: string) => ({ values, stoppedBy: why });
  // One call of Next(): annotation and header rows are read until a data row.
  for (;;) {
    let state: "normal" | "annotation" | "names" | "error" = "normal";
    let datatypeFound = false;
    let record: FluxValue | undefined;
    for (;;) {
      if (i >= rows.rows.length) return rows.error ? stop(rows.error) : { values };
      const row = rows.rows[i++] as string[];
      if (row.length <= 1) continue;
      const first = row[0] as string;
      if (first.startsWith("#") && state === "normal") {
        table = row.slice(1).map(() => ({ name: "", type: "", fallback: "" }));
        state = "annotation";
      }
      if (!table) return stop("parsing error, annotations not found");
      if (row.length - 1 !== table.length) {
        return stop(
          `parsing error, row has different number of columns than the table: ${row.length - 1} vs ${table.length}`,
        );
      }
      const cells = row.slice(1);
      if (first === "") {
        if (state === "annotation") {
          if (!datatypeFound) return stop("parsing error, datatype annotation not found");
          state = "names";
        }
        if (state === "names") {
          if (cells[0] === "error") state = "error";
          else {
            cells.forEach((n, c) => {
              (table as Column[])[c] = { ...(table as Column[])[c], name: n } as Column;
            });
            state = "normal";
          }
          continue;
        }
        if (state === "error") {
          const message = cells[0] ? cells[0] : "unknown query error";
          return stop(`${message}${cells[1] ? `,${cells[1]}` : ""}`);
        }
        let value: FluxValue = { value: null, printed: "<nil>" };
        for (let c = 0; c < table.length; c++) {
          const column = table[c] as Column;
          const converted = toValue(cells[c] === "" ? column.fallback : (cells[c] as string), column);
          if ("error" in converted) return stop(converted.error);
          if (column.name === "_value") value = converted;
        }
        record = value;
        break;
      }
      if (first === "#datatype") {
        datatypeFound = true;
        cells.forEach((d, c) => {
          (table as Column[])[c] = { ...(table as Column[])[c], type: d } as Column;
        });
        continue;
      }
      if (first === "#group") continue;
      if (first === "#default") {
        cells.forEach((d, c) => {
          (table as Column[])[c] = { ...(table as Column[])[c], fallback: d } as Column;
        });
        continue;
      }
      // Any other first cell: the client reports a record without reading one, so the last
      // record counts again (before any record, Go would dereference nil: nothing is read).
      if (!last) return stop(`unexpected row ${JSON.stringify(first)}`);
      record = last;
      break;
    }
    values.push(record);
    last = record;
  }
}

interface Column {
  name: string;
  type: string;
  fallback: string;
}

/** The client's `toValue`: an empty cell is nil, otherwise converted by the column's datatype. */
function toValue(s: string, column: Column): FluxValue | { error: string } {
  if (s === "") return { value: null, printed: "<nil>" };
  switch (column.type) {
    case "string":
      return { value: s, printed: s };
    case "dateTime:RFC3339":
    case "dateTime:RFC3339Nano":
      try {
        return { value: s, printed: parseTime("2006-01-02T15:04:05Z07:00", s).format() };
      } catch (e) {
        return { error: (e as Error).message };
      }
    case "duration": {
      const d = parseGoDuration(s);
      if ("error" in d) return { error: `time: invalid duration ${JSON.stringify(s)}` };
      return { value: Number(d.ns), printed: goDuration(d.ns) };
    }
    case "double": {
      const f = goParseFloat(s);
      if ("error" in f) return f;
      return { value: f.value, printed: goFloatV(f.value) };
    }
    case "boolean": {
      const b = s.toLowerCase() !== "false";
      return { value: b, printed: String(b) };
    }
    case "long": {
      const n = goParseInt(s);
      if ("error" in n) return n;
      return { value: Number(n.value), printed: n.value.toString() };
    }
    case "unsignedLong": {
      if (!/^[0-9]+$/.test(s))
        return { error: `strconv.ParseUint: parsing ${JSON.stringify(s)}: invalid syntax` };
      const n = BigInt(s);
      if (n >= 1n << 64n)
        return { error: `strconv.ParseUint: parsing ${JSON.stringify(s)}: value out of range` };
      return { value: Number(n), printed: n.toString() };
    }
    case "base64Binary": {
      if (!/^[A-Za-z0-9+/]*={0,2}$/.test(s) || s.length % 4 !== 0) return { error: "illegal base64 data" };
      const bytes = [...Buffer.from(s, "base64")];
      return { value: Buffer.from(bytes).toString("latin1"), printed: `[${bytes.join(" ")}]` };
    }
    default:
      return { error: `${column.name} has unknown data type ${column.type}` };
  }
}

/** Go's `Duration.String()`: `1h0m0s`, `1.5s`, `300ms`, `0s`. */
export function goDuration(ns: bigint): string {
  if (ns === 0n) return "0s";
  const neg = ns < 0n;
  let u = neg ? -ns : ns;
  let out: string;
  if (u < 1_000_000_000n) {
    const [unit, scale] = u < 1000n ? ["ns", 1n] : u < 1_000_000n ? ["µs", 1000n] : ["ms", 1_000_000n];
    out = `${fraction(u, scale as bigint)}${unit}`;
  } else {
    const h = u / 3_600_000_000_000n;
    u %= 3_600_000_000_000n;
    const m = u / 60_000_000_000n;
    u %= 60_000_000_000n;
    out = `${fraction(u, 1_000_000_000n)}s`;
    if (h > 0n) out = `${h}h${m}m${out}`;
    else if (m > 0n) out = `${m}m${out}`;
  }
  return neg ? `-${out}` : out;
}

function fraction(v: bigint, scale: bigint): string {
  const whole = v / scale;
  const rest = v % scale;
  if (rest === 0n) return whole.toString();
  const digits = scale.toString().length - 1;
  return `${whole}.${rest.toString().padStart(digits, "0").replace(/0+$/, "")}`;
}

/**
 * Go's `encoding/csv` with `FieldsPerRecord = -1`: quoted fields (`""` a quote), CRLF as LF, empty
 * lines skipped. The rows up to the first syntax error, and that error.
 */
export function csvRows(text: string): { rows: string[][]; error?: string } {
  const rows: string[][] = [];
  const lines = text.replace(/\r\n/g, "\n");
  let i = 0;
  let line = 1;
  while (i < lines.length) {
    if (lines[i] === "\n") {
      i++;
      line++;
      continue;
    }
    const row: string[] = [];
    for (;;) {
      let field = "";
      if (lines[i] === '"') {
        i++;
        for (;;) {
          if (i >= lines.length)
            return { rows, error: `record on line ${line}: extraneous or missing " in quoted-field` };
          const c = lines[i] as string;
          if (c === '"') {
            if (lines[i + 1] === '"') {
              field += '"';
              i += 2;
              continue;
            }
            i++;
            break;
          }
          if (c === "\n") line++;
          field += c;
          i++;
        }
        if (i < lines.length && lines[i] !== "," && lines[i] !== "\n") {
          return { rows, error: `parse error on line ${line}: extraneous or missing " in quoted-field` };
        }
      } else {
        while (i < lines.length && lines[i] !== "," && lines[i] !== "\n") {
          if (lines[i] === '"')
            return { rows, error: `parse error on line ${line}: bare " in non-quoted field` };
          field += lines[i];
          i++;
        }
      }
      row.push(field);
      if (i < lines.length && lines[i] === ",") {
        i++;
        continue;
      }
      if (i < lines.length) {
        i++;
        line++;
      }
      break;
    }
    rows.push(row);
  }
  return { rows };
}
