import { existsSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { expectGolden, inCi } from "./golden.ts";

const dir = mkdtempSync(join(tmpdir(), "golden-"));
let n = 0;
const fresh = () => join(dir, `case-${++n}.golden.json`);

describe("golden files", () => {
  it("in CI, a missing golden file fails, says how to create it, and is not written", () => {
    const path = fresh();
    expect(() => expectGolden(path, "{}\n", { CI: "true" })).toThrow(
      /golden file .*case-1\.golden\.json is missing: create it with `UPDATE_GOLDEN=1 npx vitest run/,
    );
    expect(existsSync(path)).toBe(false);
  });

  it("in CI, UPDATE_GOLDEN is refused and the file is left as it was", () => {
    const path = fresh();
    writeFileSync(path, "old\n");
    expect(() => expectGolden(path, "new\n", { CI: "1", UPDATE_GOLDEN: "1" })).toThrow(/refused in CI/);
    expect(readFileSync(path, "utf8")).toBe("old\n");
  });

  it("in CI, an existing golden file is compared", () => {
    const path = fresh();
    writeFileSync(path, "same\n");
    expect(() => expectGolden(path, "same\n", { CI: "true" })).not.toThrow();
    expect(() => expectGolden(path, "other\n", { CI: "true" })).toThrow(
      /differs from the reviewed golden file/,
    );
  });

  it("locally, a missing golden file is written from the output, and UPDATE_GOLDEN rewrites one", () => {
    const path = fresh();
    expectGolden(path, "first\n", {});
    expect(readFileSync(path, "utf8")).toBe("first\n");
    expect(() => expectGolden(path, "second\n", {})).toThrow(/differs/);
    expectGolden(path, "second\n", { UPDATE_GOLDEN: "1" });
    expect(readFileSync(path, "utf8")).toBe("second\n");
  });

  it("reads CI as CI services set it", () => {
    expect([
      inCi({ CI: "true" }),
      inCi({ CI: "1" }),
      inCi({ CI: "false" }),
      inCi({ CI: "0" }),
      inCi({}),
    ]).toEqual([true, true, false, false, false]);
  });
});
