import { fieldTypeError, goField, goJsonKind, goMarshal, goParse, isObject } from "./go-json.ts";
import { formatFloat, type ProviderResult } from "./port.ts";

/**
 * A Datadog answer read as Argo reads it (`parseResponseV1`, `parseResponseV2`, `extractValues`,
 * `groupNameAt` and `groupsMetadata` of `metricproviders/datadog/datadog.go`): the status checks,
 * the Go types the body decodes into (and their error messages), which value is the result, the
 * empty answer (a nil result, printed `[]`) and a grouped query's `metadata.groups`.
 */

/** Groups kept in `metadata.groups`: the lowest and highest halves of this many (Argo's cap). */
export const MAX_GROUPS_IN_METADATA = 100;

/** Argo's checks of the status: exactly 200, and 401/403 named as authentication errors. */
export function datadogStatusProblem(status: number, body: string): string | undefined {
  if (status === 401 || status === 403)
    return `received authentication error response code: ${status} ${body}`;
  if (status !== 200) return `received non 2xx response code: ${status} ${body}`;
  return undefined;
}

const V1_SERIES_TYPE = 'struct { Pointlist [][]float64 "json:\\"pointlist\\"" }';

/** `/api/v1/query`: the last point of the first series is the result (a float64). */
export function readV1(body: string): ProviderResult {
  const parsed = goParse(body);
  if ("error" in parsed) return { ok: false, message: `Could not parse JSON body: ${parsed.error}` };
  const decoded = decodeV1(parsed.value);
  if ("error" in decoded) return { ok: false, message: `Could not parse JSON body: ${decoded.error}` };
  const series = decoded.series;
  const first = series?.[0];
  if (!series || !first?.pointlist || first.pointlist.length === 0) {
    return { ok: true, result: null, value: JSON.stringify(series ?? null) };
  }
  const point = first.pointlist[first.pointlist.length - 1] ?? [];
  if (point.length !== 2) return { ok: false, message: "Datapoint does not have 2 values" };
  const value = point[1] as number;
  return { ok: true, result: value, resultType: "float64", value: formatFloat(value) };
}

type V1Series = Array<{ pointlist: number[][] | null }> | null;

/** `datadogResponseV1` decoded as Go does: a JSON null is Go's zero value (a null point is 0). */
function decodeV1(root: unknown): { series: V1Series } | { error: string } {
  if (root === null) return { series: null };
  if (!isObject(root)) {
    return {
      error: `json: cannot unmarshal ${goJsonKind(root)} into Go value of type datadog.datadogResponseV1`,
    };
  }
  const raw = goField(root, "series");
  if (raw === undefined || raw === null) return { series: null };
  const at = (kind: string, field: string, type: string) => ({
    error: fieldTypeError(kind, field === "Series" ? "datadogResponseV1" : "", field, type),
  });
  if (!Array.isArray(raw)) return at(goJsonKind(raw), "Series", `[]${V1_SERIES_TYPE}`);
  const series: Array<{ pointlist: number[][] | null }> = [];
  for (const entry of raw) {
    if (entry === null) {
      series.push({ pointlist: null });
      continue;
    }
    if (!isObject(entry)) return at(goJsonKind(entry), "Series", V1_SERIES_TYPE);
    const points = goField(entry, "pointlist");
    if (points === undefined || points === null) {
      series.push({ pointlist: null });
      continue;
    }
    if (!Array.isArray(points)) return at(goJsonKind(points), "Series.pointlist", "[][]float64");
    const list: number[][] = [];
    for (const point of points) {
      if (point === null) {
        list.push([]);
        continue;
      }
      if (!Array.isArray(point)) return at(goJsonKind(point), "Series.pointlist", "[]float64");
      const numbers: number[] = [];
      for (const n of point) {
        if (n !== null && typeof n !== "number") return at(goJsonKind(n), "Series.pointlist", "float64");
        numbers.push(n ?? 0);
      }
      list.push(numbers);
    }
    series.push({ pointlist: list });
  }
  return { series };
}

interface V2Column {
  name: string;
  type: string;
  values: unknown[];
}

/** `/api/v2/query/scalar`: a float64, or a list of them for a grouped (`by {tag}`) query. */
export function readV2(body: string): ProviderResult {
  const parsed = goParse(body);
  if ("error" in parsed) return { ok: false, message: `Could not parse JSON body: ${parsed.error}` };
  const decoded = decodeV2(parsed.value);
  if ("error" in decoded) return { ok: false, message: `Could not parse JSON body: ${decoded.error}` };
  if (decoded.errors !== "")
    return { ok: false, message: `There were errors in your query: ${decoded.errors}` };
  const extracted = extractValues(decoded.columns);
  if ("error" in extracted) return { ok: false, message: extracted.error };
  const { values, groups, grouped } = extracted;
  if (values.length === 0) return { ok: true, result: null, value: "[]" };
  if (!grouped) {
    const value = values[0] as number;
    return { ok: true, result: value, resultType: "float64", value: formatFloat(value) };
  }
  const { json, truncated } = groupsMetadata(groups);
  return {
    ok: true,
    result: values,
    resultType: "float64s",
    value: `[${values.map(formatFloat).join(",")}]`,
    metadata: { groups: json, ...(truncated ? { groups_truncated: "true" } : {}) },
  };
}

const V2_DATA_TYPE = "struct { Attributes struct { Columns []datadog.datadogV2Column }; Errors string }";

/** `datadogResponseV2` decoded as Go does. */
function decodeV2(root: unknown): { columns: V2Column[]; errors: string } | { error: string } {
  const none = { columns: [], errors: "" };
  if (root === null) return none;
  if (!isObject(root)) {
    return {
      error: `json: cannot unmarshal ${goJsonKind(root)} into Go value of type datadog.datadogResponseV2`,
    };
  }
  const data = goField(root, "data");
  if (data === undefined || data === null) return none;
  if (!isObject(data))
    return { error: fieldTypeError(goJsonKind(data), "datadogResponseV2", "Data", V2_DATA_TYPE) };
  const errors = goField(data, "errors");
  if (errors !== undefined && errors !== null && typeof errors !== "string") {
    return { error: fieldTypeError(goJsonKind(errors), "", "Data.Errors", "string") };
  }
  const attributes = goField(data, "attributes");
  if (attributes !== undefined && attributes !== null && !isObject(attributes)) {
    return {
      error: fieldTypeError(
        goJsonKind(attributes),
        "",
        "Data.Attributes",
        "struct { Columns []datadog.datadogV2Column }",
      ),
    };
  }
  const columns = decodeColumns(isObject(attributes) ? goField(attributes, "columns") : undefined);
  if ("error" in columns) return columns;
  return { columns: columns.columns, errors: typeof errors === "string" ? errors : "" };
}

function decodeColumns(raw: unknown): { columns: V2Column[] } | { error: string } {
  if (raw === undefined || raw === null) return { columns: [] };
  const path = "Data.Attributes.Columns";
  if (!Array.isArray(raw)) {
    return { error: fieldTypeError(goJsonKind(raw), "", path, "[]datadog.datadogV2Column") };
  }
  const columns: V2Column[] = [];
  for (const entry of raw) {
    if (entry === null) {
      columns.push({ name: "", type: "", values: [] });
      continue;
    }
    if (!isObject(entry))
      return { error: fieldTypeError(goJsonKind(entry), "", path, "datadog.datadogV2Column") };
    const column: V2Column = { name: "", type: "", values: [] };
    for (const field of ["name", "type"] as const) {
      const v = goField(entry, field);
      if (v !== undefined && v !== null && typeof v !== "string") {
        return { error: fieldTypeError(goJsonKind(v), "datadogV2Column", `${path}.${field}`, "string") };
      }
      column[field] = typeof v === "string" ? v : "";
    }
    const values = goField(entry, "values");
    if (values !== undefined && values !== null && !Array.isArray(values)) {
      return {
        error: fieldTypeError(goJsonKind(values), "datadogV2Column", `${path}.values`, "[]json.RawMessage"),
      };
    }
    column.values = Array.isArray(values) ? values : [];
    columns.push(column);
  }
  return { columns };
}

interface Grouped {
  name: string;
  value: number;
}

/**
 * Argo's `extractValues`: the first number column (or one with no type) holds the values, a null
 * is skipped with its group; every group column names a row, joined across them.
 */
export function extractValues(
  columns: V2Column[],
): { values: number[]; groups: Grouped[]; grouped: boolean } | { error: string } {
  const numbers = columns.find((c) => c.type === "" || c.type === "number");
  const groupColumns = columns.filter((c) => c.type === "group");
  const grouped = groupColumns.length > 0;
  const values: number[] = [];
  const groups: Grouped[] = [];
  if (!numbers) return { values, groups, grouped };
  for (const [i, raw] of numbers.values.entries()) {
    if (raw === null) continue;
    if (typeof raw !== "number") {
      return {
        error: `could not parse numeric value ${JSON.stringify(JSON.stringify(raw))} in column ${JSON.stringify(numbers.name)}: json: cannot unmarshal ${goJsonKind(raw)} into Go value of type float64`,
      };
    }
    values.push(raw);
    if (grouped) {
      const name = groupNameAt(groupColumns, i);
      if (name === undefined) return { error: `could not parse group label at index ${i}` };
      groups.push({ name, value: raw });
    }
  }
  return { values, groups, grouped };
}

/** A row's label joined across the group columns, or undefined when a column has no usable entry. */
export function groupNameAt(columns: V2Column[], index: number): string | undefined {
  const parts: string[] = [];
  for (const column of columns) {
    if (index >= column.values.length) return undefined;
    const tags = column.values[index];
    if (!Array.isArray(tags) || tags.length === 0) return undefined;
    if (tags.some((t) => t !== null && typeof t !== "string")) return undefined;
    parts.push(...tags.map((t) => (t === null ? "" : (t as string))));
  }
  return parts.join(",");
}

/** `metadata.groups`: every group, or past the cap the lowest and the highest halves by value. */
export function groupsMetadata(groups: Grouped[]): { json: string; truncated: boolean } {
  if (groups.length <= MAX_GROUPS_IN_METADATA) return { json: goMarshal(groups), truncated: false };
  const sorted = [...groups].sort((a, b) => a.value - b.value);
  const low = Math.floor(MAX_GROUPS_IN_METADATA / 2);
  const high = MAX_GROUPS_IN_METADATA - low;
  return {
    json: goMarshal([...sorted.slice(0, low), ...sorted.slice(sorted.length - high)]),
    truncated: true,
  };
}
