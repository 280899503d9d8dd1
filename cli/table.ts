/**
 * Aligns a table in columns two spaces apart, as `kubectl` prints them: the header line, then one
 * line per row, each without trailing spaces. Returned as lines so callers can interleave details.
 */
export function columns(header: readonly string[], rows: readonly (readonly string[])[]): string[] {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? "").length)));
  const line = (cells: readonly string[]) =>
    cells
      .map((c, i) => c.padEnd(widths[i] ?? 0))
      .join("  ")
      .trimEnd();
  return [line(header), ...rows.map(line)];
}
