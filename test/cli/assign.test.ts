import { run } from "@sfn-rollouts/test-support/cli";
import { describe, expect, it } from "vitest";
import { bucket } from "../../functions/router/cohort.ts";

describe("rollouts assign", () => {
  it("prints the reference's cohort: 277 of 1000 users at weight 30, salt v2", async () => {
    const r = await run("assign", "--weight", "30", "--salt", "v2", "--users", "1000");
    expect(r.code).toBe(0);
    expect(r.out).toBe("cohort: 277 of 1000 users (27.7%) at weight 30 with salt v2 (users u0 … u999)\n");
  });

  it("prints one user's bucket and side", async () => {
    const r = await run("assign", "--weight", "30", "--salt", "v2", "--user", "alice");
    expect(r.code).toBe(0);
    const b = bucket("alice", "v2");
    expect(r.out).toBe(`alice: bucket ${b.toFixed(4)} → ${b < 30 ? "candidate" : "primary"}\n`);
  });

  it.each([
    [["--weight", "130", "--users", "10"], '--weight must be a percent from 0 to 100, got "130"'],
    [["--weight", "30", "--users", "1.5"], "--users must be a whole number"],
    [["--weight", "30"], "give --users N"],
  ])("refuses %j with one line", async (args, message) => {
    const r = await run("assign", ...args);
    expect(r.code).toBe(2);
    expect(r.err).toContain(message);
  });
});
