import { UsageError } from "./io.ts";

/** A decimal number as a person types it: `40`, `2.5`, `-1`, `.5`, `1e3`; never hex, `Infinity` or blank. */
const DECIMAL = /^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$/;

/** The most requests per second the commands model (`plan`, `simulate`). */
export const MAX_RPS = 100_000;

/**
 * A commander option parser for a decimal number that passes `check`; anything else is a
 * {@link UsageError} `FLAG must be WHAT, got "VALUE"` (exit 2).
 */
export const number =
  (flag: string, check: (n: number) => boolean, what: string) =>
  (value: string): number => {
    const n = Number(value);
    if (!DECIMAL.test(value.trim()) || !Number.isFinite(n) || !check(n)) {
      throw new UsageError(`${flag} must be ${what}, got "${value}"`);
    }
    return n;
  };

/** A share between 0 and 1 (an error rate). */
export const rate = (flag: string) => number(flag, (n) => n >= 0 && n <= 1, "a share between 0 and 1");

/** Requests per second: above 0, at most {@link MAX_RPS}. */
export const rps = (flag: string) =>
  number(flag, (n) => n > 0 && n <= MAX_RPS, `a number in (0, ${MAX_RPS}]`);
