import { columns } from "../../cli/table.ts";
import { StoredAnalysisSchema } from "../../functions/workflow/analysis.ts";
import { makeDataset } from "./model.ts";
import { accuracyOf, MODEL_VERSIONS } from "./model-rollout.ts";
import { finished, type ModelStack, startModelStack } from "./model-stack.ts";

/** One pushed model and what happened to it. */
export interface ModelOutcome {
  version: string;
  outcome: "Healthy" | "Degraded" | "timed out";
  message: string;
  seconds: number;
  /** Answers the users got from this version while it was the candidate, their bad share, users. */
  served: number;
  badFeedback: number;
  users: number;
}

/**
 * `npm start -- --model`: a model rollout in real time. v1 (the champion) is the first release;
 * v2 (a retrain, as accurate as v1) is shadowed, compared with v1 on live inputs, then served to a
 * sticky 25% and 50% of the users and promoted; v3 (about 9 points less accurate, but agreeing with v2 on 90% of the
 * inputs) passes the shadow, is served to a sticky 25%, and the judge comparing its bad-feedback
 * rate with v2's rolls it back. Every decision reads the router's `/compare`.
 */
export async function runModelDemo(
  options: {
    rps?: number;
    print?: (line: string) => void;
    signal?: AbortSignal;
    perVersionTimeoutSeconds?: number;
  } = {},
): Promise<{ outcomes: ModelOutcome[]; ok: boolean }> {
  const print = options.print ?? ((line: string) => process.stdout.write(`${line}\n`));
  const rps = options.rps ?? 100;
  const m = await startModelStack({ spec: { initialDelay: "3s", interval: "1s", count: 60, samples: 300 } });
  const holdout = makeDataset(99, 5000);
  try {
    print(
      `models: ${MODEL_VERSIONS.map((v) => `${v.version} ${m.models[v.version]?.url} (${v.story}, ${(100 * accuracyOf(v.weights, holdout)).toFixed(1)}% accurate)`).join("; ")}`,
    );
    print(
      `model router ${m.proxy.url} (admin ${m.proxy.adminUrl}: /compare, /admin/config); feedback: POST ${m.proxy.url}/feedback`,
    );
    print("");
    const load = startUsers(m, rps);
    const outcomes: ModelOutcome[] = [];
    const seen = new Set<string>();
    const timeoutMs = (options.perVersionTimeoutSeconds ?? 120) * 1000;
    for (const [n, { version }] of MODEL_VERSIONS.entries()) {
      outcomes.push(await rollOut(m, { print, seen, timeoutMs, signal: options.signal }, n, version));
      print("");
      if (options.signal?.aborted) break;
    }
    await load.stop();
    const ok = await printSummary(m, print, outcomes);
    return { outcomes, ok };
  } finally {
    await m.close();
  }
}

/** The users: a batch of requests every 100 ms, `rps` a second in all, until they stop. */
function startUsers(m: ModelStack, rps: number): { stop(): Promise<void> } {
  let running = true;
  const load = (async () => {
    while (running) {
      const started = Date.now();
      await m.users.batch(Math.max(1, Math.round(rps / 10)));
      await new Promise((r) => setTimeout(r, Math.max(0, 100 - (Date.now() - started))));
    }
  })();
  return {
    stop: async () => {
      running = false;
      await load;
    },
  };
}

/** What following one model's rollout needs: where to print, the events already printed, how long to wait. */
interface Following {
  print: (line: string) => void;
  seen: Set<string>;
  timeoutMs: number;
  signal: AbortSignal | undefined;
}

/**
 * Pushes one model and prints its rollout's events until it is finished (or the time is up, or
 * Ctrl-C): its outcome and what its users got from it. For v2, the one that is shadowed then
 * promoted, the last measurement of each of its analyses too.
 */
async function rollOut(
  m: ModelStack,
  following: Following,
  n: number,
  version: string,
): Promise<ModelOutcome> {
  const { print, seen, signal } = following;
  const before = { ...(m.users.counts.byVersion[version] ?? { served: 0, bad: 0 }) };
  const t0 = Date.now();
  print(`push ${version}`);
  await m.stack.push(version, `sha256:${String(n + 1).repeat(64)}`);
  const until = Date.now() + following.timeoutMs;
  let item = await m.stack.item();
  while (!finished(version)(item) && Date.now() < until && !signal?.aborted) {
    await new Promise((r) => setTimeout(r, 250));
    item = await m.stack.item();
    for (const event of item?.events ?? []) {
      const key = `${event.at}:${event.type}:${event.message}`;
      if (seen.has(key) || event.type === "Triggered") continue;
      seen.add(key);
      print(`  ${event.type.padEnd(22)} ${event.message}`);
    }
  }
  const after = m.users.counts.byVersion[version];
  const served = (after?.served ?? 0) - before.served;
  const outcome: ModelOutcome = {
    version,
    outcome: item?.phase === "Healthy" || item?.phase === "Degraded" ? item.phase : "timed out",
    message: item?.message ?? "",
    seconds: (Date.now() - t0) / 1000,
    served,
    badFeedback: (after?.bad ?? 0) - before.bad,
    users: after?.users.size ?? 0,
  };
  if (version === "v2") await printLastMeasurements(m, print);
  return outcome;
}

/** The last measurement of each metric of each analysis run so far. */
async function printLastMeasurements(m: ModelStack, print: (line: string) => void): Promise<void> {
  const runs = await m.stack.store.listRuns(m.stack.rollout, StoredAnalysisSchema);
  for (const run of runs) {
    for (const result of run.run.run.metricResults) {
      const last = result.measurements.at(-1);
      if (last) print(`  ${result.name}: ${last.phase} ${last.message ?? ""}`.trimEnd());
    }
  }
}

/**
 * Prints the outcomes' table, the good-feedback rates of the stable model and v3 as the router
 * compares them, each rollout's message, and whether the outcomes are the expected ones: the
 * demo's result.
 */
async function printSummary(
  m: ModelStack,
  print: (line: string) => void,
  outcomes: ModelOutcome[],
): Promise<boolean> {
  const compare = (await (
    await fetch(`${m.proxy.adminUrl}/compare?primary=stable&candidate=v3&window=600`)
  ).json()) as {
    primary: { version: string; feedback_rate: number | null };
    candidate: { feedback_rate: number | null };
  };
  print(
    columns(
      ["model", "outcome", "duration", "served as candidate", "bad feedback", "users"],
      outcomes.map((o) => [
        o.version,
        o.outcome,
        `${o.seconds.toFixed(1)} s`,
        String(o.served),
        o.served ? `${((100 * o.badFeedback) / o.served).toFixed(1)}%` : "-",
        String(o.users),
      ]),
    ).join("\n"),
  );
  print("");
  print(
    `good-feedback rate over the last 10 minutes: ${compare.primary.version} ${pct(compare.primary.feedback_rate)}, v3 ${pct(compare.candidate.feedback_rate)}`,
  );
  for (const o of outcomes.filter((x) => x.message)) print(`${o.version}: ${o.message}`);
  const ok =
    outcomes[0]?.outcome === "Healthy" &&
    outcomes[1]?.outcome === "Healthy" &&
    outcomes[2]?.outcome === "Degraded";
  print(
    ok
      ? "v1 released, v2 shadowed then promoted, v3 rolled back by the feedback judge"
      : "NOT the expected outcome",
  );
  return ok;
}

const pct = (x: number | null) => (x === null ? "-" : `${(100 * x).toFixed(1)}%`);
