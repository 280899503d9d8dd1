/**
 * Prometheus remote write (protocol 1.0) without dependencies: a `WriteRequest` encoded as
 * protobuf by hand and framed as snappy's block format with literal chunks only (valid snappy that
 * any decoder reads; the payload is small and local, so compressing it would buy nothing).
 *
 * WriteRequest { repeated TimeSeries timeseries = 1; }
 * TimeSeries   { repeated Label labels = 1; repeated Sample samples = 2; }
 * Label        { string name = 1; string value = 2; }
 * Sample       { double value = 1; int64 timestamp = 2; }
 */

/** One series: its labels (with `__name__`) and its samples in time order. */
export interface WriteSeries {
  readonly labels: Readonly<Record<string, string>>;
  readonly samples: ReadonlyArray<{ readonly value: number; readonly timestampMs: number }>;
}

function varint(value: number | bigint, out: number[]): void {
  let v = BigInt.asUintN(64, BigInt(value));
  while (v >= 0x80n) {
    out.push(Number((v & 0x7fn) | 0x80n));
    v >>= 7n;
  }
  out.push(Number(v));
}

function lengthDelimited(field: number, bytes: Uint8Array | number[], out: number[]): void {
  varint((field << 3) | 2, out);
  varint(bytes.length, out);
  for (const b of bytes) out.push(b);
}

const utf8 = new TextEncoder();

/** The protobuf bytes of a `WriteRequest`; labels are sorted by name, as the protocol requires. */
export function encodeWriteRequest(series: readonly WriteSeries[]): Uint8Array {
  const out: number[] = [];
  const double = new DataView(new ArrayBuffer(8));
  for (const s of series) {
    const ts: number[] = [];
    for (const name of Object.keys(s.labels).sort()) {
      const label: number[] = [];
      lengthDelimited(1, utf8.encode(name), label);
      lengthDelimited(2, utf8.encode(s.labels[name] ?? ""), label);
      lengthDelimited(1, label, ts);
    }
    for (const sample of s.samples) {
      const bytes: number[] = [];
      bytes.push((1 << 3) | 1);
      double.setFloat64(0, sample.value, true);
      for (let i = 0; i < 8; i++) bytes.push(double.getUint8(i));
      varint((2 << 3) | 0, bytes);
      varint(BigInt(Math.round(sample.timestampMs)), bytes);
      lengthDelimited(2, bytes, ts);
    }
    lengthDelimited(1, ts, out);
  }
  return Uint8Array.from(out);
}

/** Snappy block format: the uncompressed length, then the bytes as literal chunks of at most 64 KiB. */
export function snappyLiteral(data: Uint8Array): Uint8Array {
  const out: number[] = [];
  varint(data.length, out);
  for (let offset = 0; offset < data.length; offset += 65536) {
    const chunk = data.subarray(offset, Math.min(data.length, offset + 65536));
    const n = chunk.length - 1;
    if (n < 60) out.push(n << 2);
    else if (n < 256) out.push(60 << 2, n);
    else out.push(61 << 2, n & 0xff, n >> 8);
    for (const b of chunk) out.push(b);
  }
  return Uint8Array.from(out);
}

/** Sends series to `{url}/api/v1/write` (Prometheus started with `--web.enable-remote-write-receiver`). */
export async function remoteWrite(url: string, series: readonly WriteSeries[]): Promise<void> {
  if (series.length === 0) return;
  const res = await fetch(`${url.replace(/\/+$/, "")}/api/v1/write`, {
    method: "POST",
    headers: {
      "content-type": "application/x-protobuf",
      "content-encoding": "snappy",
      "x-prometheus-remote-write-version": "0.1.0",
    },
    body: snappyLiteral(encodeWriteRequest(series)),
  });
  if (!res.ok) {
    throw new Error(`remote write to ${url} answered ${res.status}: ${(await res.text()).slice(0, 500)}`);
  }
  await res.arrayBuffer().catch(() => undefined);
}
