import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import {
  assign,
  bucket,
  cohortKeyOf,
  cohortSize,
  fraction,
  mirrored,
  userName,
} from "../../../functions/router/cohort.ts";

/** Values computed by test/fixtures/router/make_cohort_vectors.py with python3's hashlib. */
const reference = JSON.parse(
  readFileSync(new URL("../../fixtures/router/cohort-vectors.json", import.meta.url), "utf8"),
) as {
  fractions: { parts: string[]; fraction: number }[];
  cohorts: { salt: string; weight: number; users: number; inCohort: number }[];
  overlapV2V3At30: number;
};

describe("cohort hash", () => {
  it.each(reference.fractions)(
    "fraction($parts) is python's value to the last bit",
    ({ parts, fraction: expected }) => {
      expect(fraction(...parts)).toBe(expected);
    },
  );

  it.each(reference.cohorts)(
    "$inCohort of $users users u0… are in the cohort at weight $weight with salt $salt",
    ({ salt, weight, users, inCohort }) => {
      expect(cohortSize(users, salt, weight)).toBe(inCohort);
    },
  );

  it("reproduces the reference's figure: 277 of 1,000 users at weight 30 with salt v2 (users u0…u999)", () => {
    expect(cohortSize(1000, "v2", 30)).toBe(277);
    expect(userName(0)).toBe("u0");
  });

  it("is sticky: the same user always lands in the same bucket", () => {
    for (let i = 0; i < 200; i++) expect(bucket(`u${i}`, "v2")).toBe(bucket(`u${i}`, "v2"));
  });

  it("raising the weight only adds users", () => {
    const weights = [0, 1, 5, 10, 25, 30, 50, 75, 99, 100];
    for (let i = 0; i < 1000; i++) {
      const user = userName(i);
      let inCohort = false;
      for (const w of weights) {
        const now = assign(user, "v2", w) === "candidate";
        // once in, never out
        expect(inCohort && !now).toBe(false);
        inCohort = now;
      }
    }
  });

  it("a new salt reshuffles the cohort: v3's 30% is mostly other users than v2's", () => {
    const v2 = new Set([...Array(1000).keys()].filter((i) => assign(userName(i), "v2", 30) === "candidate"));
    const v3 = [...Array(1000).keys()].filter((i) => assign(userName(i), "v3", 30) === "candidate");
    const overlap = v3.filter((i) => v2.has(i)).length;
    expect(overlap).toBe(reference.overlapV2V3At30);
    // independent cohorts overlap by about 30% of 30%: far from identical
    expect(overlap).toBeLessThan(v3.length / 2);
  });

  it("weight 0 sends nobody and weight 100 everybody; the comparison is strict", () => {
    expect(assign("u0", "v2", 0)).toBe("primary");
    expect(assign("u0", "v2", 100)).toBe("candidate");
    const b = bucket("u0", "v2");
    expect(assign("u0", "v2", b)).toBe("primary");
    expect(assign("u0", "v2", b + 1e-9)).toBe("candidate");
  });

  it("mirrors a request id at the reference's fraction", () => {
    const f = fraction("mirror", "req-1") * 100;
    expect(mirrored("req-1", Math.ceil(f))).toBe(true);
    expect(mirrored("req-1", Math.floor(f))).toBe(false);
    expect(mirrored("req-1", 0)).toBe(false);
  });
});

describe("cohort key", () => {
  it("reads the header first, then the body field, else nothing", () => {
    expect(cohortKeyOf({}, { "x-user-id": "alice" }, { user: "bob" })).toBe("alice");
    expect(cohortKeyOf({}, {}, { user: "bob" })).toBe("bob");
    expect(cohortKeyOf({}, {}, { user: 42 })).toBe("42");
    expect(cohortKeyOf({ header: "X-Customer", field: "customer" }, { "x-customer": "c1" }, {})).toBe("c1");
    expect(cohortKeyOf({ field: "customer" }, {}, { customer: "c2", user: "u" })).toBe("c2");
    expect(cohortKeyOf({}, {}, [1])).toBeUndefined();
    expect(cohortKeyOf({}, {}, { user: { nested: true } })).toBeUndefined();
  });
});
