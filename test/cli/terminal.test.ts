import { describe, expect, it } from "vitest";
import { formatMeasurement } from "../../cli/commands/analyze.ts";
import { printable, printableJson } from "../../cli/terminal.ts";

describe("printable: text from the store or a provider, safe for a terminal", () => {
  it.each([
    ["a colour (CSI)", "\x1b[31mred\x1b[0m", "red"],
    ["a screen clear and cursor home", "\x1b[2J\x1b[Hx", "x"],
    ["a window title (OSC, BEL-terminated)", "\x1b]0;pwned\x07title", "title"],
    ["a hyperlink (OSC 8, ST-terminated)", "\x1b]8;;http://evil\x1b\\link\x1b]8;;\x1b\\", "link"],
    ["a device control string (DCS)", "\x1bP1$r0m\x1b\\x", "x"],
    ["a terminal reset (ESC c)", "a\x1bcb", "ab"],
    ["an 8-bit CSI (C1)", "a\x9b2Jb", "ab"],
    ["an 8-bit OSC (C1)", "a\x9d0;t\x9cb", "ab"],
    ["other C1 characters", "a\x85\x8e\x8fb", "ab"],
    ["an 8-bit APC string, up to its terminator", "a\x9fhidden\x9cb", "ab"],
    ["NUL, BEL, backspace, DEL", "a\x00\x07\x08\x7fb", "ab"],
    ["a lone ESC at the end", "ab\x1b", "ab"],
    ["a carriage return that would overwrite the line", "real\rfake", "real fake"],
    ["line breaks and tabs, in one line", "a\nb\tc\r\nd", "a b c d"],
    ["unicode that is not a control character", "déjà ✔ ◌ 日本 🚀", "déjà ✔ ◌ 日本 🚀"],
  ])("removes %s", (_, input, output) => {
    expect(printable(input)).toBe(output);
  });

  it("keeps line feeds and tabs where a line break is meant, never a carriage return", () => {
    expect(printable("a\n\tb\r\nc\rd\x1b[1m", { multiline: true })).toBe("a\n\tb\ncd");
  });

  it("printableJson escapes DEL and C1, which JSON.stringify leaves raw, and means the same JSON", () => {
    const value = { message: "a\x9b2Jb\x1b[0m\x7f", n: 1 };
    const json = printableJson(value, 2);
    // biome-ignore lint/suspicious/noControlCharactersInRegex: the test looks for control characters
    expect(json).not.toMatch(/[\x00-\x09\x0b-\x1f\x7f-\x9f]/);
    expect(json).toContain("\\u009b");
    expect(JSON.parse(json)).toEqual(value);
  });

  it("rollouts analyze prints a provider's value and message without their escape sequences", () => {
    const line = formatMeasurement("m", {
      phase: "Error",
      value: "[1]\x1b[2J",
      message: 'Get "http://x": \x1b]0;owned\x07boom',
      startedAt: "2026-01-01T00:00:00Z",
      finishedAt: "2026-01-01T00:00:01Z",
    });
    expect(line).toBe('measurement m = [1] Error: Get "http://x": boom');
  });
});
