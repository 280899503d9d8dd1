import { describe, expect, it } from "vitest";
import { runKubernetesDemo } from "../../local/demo/kubernetes.ts";

/**
 * `npm start -- --target kubernetes`, as a new user runs it: real time, the synthesized stack in
 * the embedded runtime, the kubernetes target against the local Kubernetes API, every pod a real
 * process of the demo service and users sent to the Service's ready pods.
 */
describe("the demo on the kubernetes target", () => {
  it("releases v1, walks v2 through Argo's pod counts and promotes it, aborts v3 by its progress deadline", async () => {
    const lines: string[] = [];
    const result = await runKubernetesDemo({ print: (l) => lines.push(l) });
    expect(result.outcomes.map((o) => [o.tag, o.outcome])).toEqual([
      ["v1", "Healthy"],
      ["v2", "Healthy"],
      ["v3", "Degraded"],
    ]);
    // 4 pods with one surge pod: 25% is 1 canary + 3 stable, 50% is 2 + 2.
    expect(result.outcomes[1]?.steps).toEqual(expect.arrayContaining(["25% 1/3", "50% 2/2"]));
    expect(result.outcomes[2]?.message).toMatch(
      /^RolloutAborted: Rollout aborted update to revision 3: TargetNotReadyError: the candidate on Deployment default\/shop-canary failed: ReplicaSet "shop-canary-[a-z0-9]+" has timed out progressing\./,
    );
    // Real traffic reached the pods of v1 and v2; none reached v3's, which never became ready.
    expect(result.outcomes[0]?.served).toBeGreaterThan(0);
    expect(result.outcomes[1]?.served).toBeGreaterThan(0);
    expect(result.outcomes[2]?.served).toBe(0);
    expect(lines.join("\n")).toContain("Progressing step 1 weight 25%: canary 1/1 ready, stable 3/3 ready");
    expect(result.ok).toBe(true);
  });
});
