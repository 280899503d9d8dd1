import { RE2JS } from "re2js";
import { vi } from "vitest";

/**
 * The subjects RE2 matched `pattern` against while `run` ran. "A hostile pattern cannot hang us"
 * rests on every user pattern going to RE2, whose time is linear in the subject, and that can be
 * checked exactly; the time a hostile subject takes can only be compared with a bound that a busy
 * machine may miss.
 *
 * Only RE2 is watched. Replacing `RegExp.prototype.exec`, even for a moment, would leave every
 * regular expression in the worker on V8's slow path for good, and some test files share a worker.
 */
export function re2Subjects(pattern: string, run: () => void): string[] {
  const spies = (["matcher", "matches", "test", "testExact"] as const).map((method) =>
    vi.spyOn(RE2JS.prototype, method),
  );
  try {
    run();
    return spies.flatMap((spy) =>
      spy.mock.calls.flatMap(([subject], i) =>
        (spy.mock.contexts[i] as RE2JS).pattern() === pattern && typeof subject === "string" ? [subject] : [],
      ),
    );
  } finally {
    for (const spy of spies) spy.mockRestore();
  }
}
