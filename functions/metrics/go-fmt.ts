import { goQuote } from "../../statemachine/expr/errors.ts";
import { formatFloat } from "./port.ts";

/**
 * What Go's `fmt` prints for the values Argo's Graphite, InfluxDB and Wavefront providers store as
 * a measurement's value: `%f` and `%.2f` (`fmt.Sprintf("%f", v)`: the exact decimal value rounded
 * half to even, which JavaScript's `toFixed` does not do) and `%v` of a decoded JSON value.
 */

/** Go's `fmt.Sprintf("%.<digits>f", v)`: `10.000000`, `-0.000000`, `NaN`, `+Inf`. */
export function goFixed(v: number, digits: number): string {
  if (Number.isNaN(v)) return "NaN";
  if (v === Number.POSITIVE_INFINITY) return "+Inf";
  if (v === Number.NEGATIVE_INFINITY) return "-Inf";
  const sign = v < 0 || Object.is(v, -0) ? "-" : "";
  const { mantissa, exponent } = bitsOf(Math.abs(v));
  const scale = 10n ** BigInt(digits);
  let whole: bigint;
  if (exponent >= 0) {
    whole = (mantissa << BigInt(exponent)) * scale;
  } else {
    const denominator = 1n << BigInt(-exponent);
    const numerator = mantissa * scale;
    whole = numerator / denominator;
    const twice = (numerator % denominator) * 2n;
    // Half to even, on the exact binary value.
    if (twice > denominator || (twice === denominator && whole % 2n === 1n)) whole += 1n;
  }
  const text = whole.toString().padStart(digits + 1, "0");
  if (digits === 0) return `${sign}${text}`;
  return `${sign}${text.slice(0, -digits)}.${text.slice(-digits)}`;
}

/** A finite non-negative double as `mantissa × 2^exponent`, exactly. */
function bitsOf(v: number): { mantissa: bigint; exponent: number } {
  const view = new DataView(new ArrayBuffer(8));
  view.setFloat64(0, v);
  const bits = view.getBigUint64(0);
  const biased = Number((bits >> 52n) & 0x7ffn);
  const fraction = bits & ((1n << 52n) - 1n);
  if (biased === 0) return { mantissa: fraction, exponent: -1074 };
  return { mantissa: fraction | (1n << 52n), exponent: biased - 1075 };
}

/**
 * Go's `%v` of a value `encoding/json` decoded into `interface{}`: `[10]`, `[1 <nil>]`,
 * `map[a:1]` (keys sorted), a float as `%g` with the shortest digits (`1.6213484e+09`).
 */
export function goV(value: unknown): string {
  if (value === null || value === undefined) return "<nil>";
  if (typeof value === "number") return goFloatV(value);
  if (typeof value === "string") return value;
  if (typeof value === "boolean") return String(value);
  if (Array.isArray(value)) return `[${value.map(goV).join(" ")}]`;
  const entries = Object.keys(value as object)
    .sort()
    .map((k) => `${k}:${goV((value as Record<string, unknown>)[k])}`);
  return `map[${entries.join(" ")}]`;
}

/** Go's `url.Error` message: `parse "./render?x": invalid URL escape "%^&"`. */
export function goUrlError(op: string, url: string, message: string): string {
  return `${op} ${goQuote(url)}: ${message}`;
}

/** Go's `%v` for a float64 (`%g` with shortest digits), as Argo prints CloudWatch and InfluxDB values. */
export function goFloatV(v: number): string {
  if (!Number.isFinite(v)) return formatFloat(v);
  if (v === 0) return Object.is(v, -0) ? "-0" : "0";
  const [mantissa = "", expText = "0"] = v.toExponential().split("e");
  const exp = Number(expText);
  if (exp < -4 || exp >= 6) {
    const sign = exp < 0 ? "-" : "+";
    return `${mantissa}e${sign}${String(Math.abs(exp)).padStart(2, "0")}`;
  }
  return formatFloat(v);
}
