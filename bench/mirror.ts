/**
 * What mirroring costs the caller: the latency of the same requests through the local proxy's model
 * router with no mirror and with 100% mirrored to a candidate, measured in alternating blocks (so a
 * busy machine slows both alike), and with a shadow that takes 200 ms per answer. The p99 added by
 * mirroring is the difference of the two p99s; the answers are checked to be the primary's.
 */
import { predict, startModel, TRUE_WEIGHTS } from "../local/demo/model.ts";
import { startProxy } from "../local/proxy/server.ts";
import type { Bench } from "./run.ts";

const BLOCKS = 10;
const PER_BLOCK = 100;

function percentile(sorted: number[], q: number): number {
  return sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)] ?? Number.NaN;
}

async function measure(
  shadowDelayMs: number,
): Promise<{ off: number[]; on: number[]; wrong: number; copies: number }> {
  const v1 = await startModel({ version: "v1", weights: TRUE_WEIGHTS });
  const v2 = await startModel({ version: "v2", weights: [1.4, -2.1, 0.2], delayMs: shadowDelayMs });
  const proxy = await startProxy({
    config: { stable: v1.url, stableVersion: "v1", canary: v2.url, canaryVersion: "v2", model: {} },
  });
  const setMirror = async (percent: number) => {
    const res = await fetch(`${proxy.adminUrl}/admin/config`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ mirrorPercent: percent }),
    });
    await res.body?.cancel();
  };
  const off: number[] = [];
  const on: number[] = [];
  let wrong = 0;
  try {
    for (let block = 0; block < BLOCKS * 2; block++) {
      const mirrorOn = block % 2 === 1;
      await setMirror(mirrorOn ? 100 : 0);
      for (let i = 0; i < PER_BLOCK; i++) {
        const features = [((i * 37) % 400) / 100 - 2, ((i * 91) % 400) / 100 - 2] as const;
        const started = performance.now();
        const res = await fetch(`${proxy.url}/predict`, {
          method: "POST",
          headers: { "content-type": "application/json", "x-user-id": `u${i}` },
          body: JSON.stringify({ features }),
        });
        const body = (await res.json()) as { label: number };
        (mirrorOn ? on : off).push(performance.now() - started);
        if (res.headers.get("x-model-version") !== "v1" || body.label !== predict(TRUE_WEIGHTS, features))
          wrong++;
      }
    }
    const view = (await (await fetch(`${proxy.adminUrl}/admin/config`)).json()) as {
      mirror: { queued: number };
    };
    return {
      off: off.sort((a, b) => a - b),
      on: on.sort((a, b) => a - b),
      wrong,
      copies: view.mirror.queued,
    };
  } finally {
    await proxy.close();
    await v1.close();
    await v2.close();
  }
}

export const bench: Bench = {
  name: "mirror",
  async run() {
    const lines = [
      `caller latency through the model router, ${BLOCKS * PER_BLOCK} requests without and ${BLOCKS * PER_BLOCK} with a 100% mirror (ms):`,
      "  shadow answers in   p50 off   p50 on   p99 off   p99 on   p99 added   copies   wrong answers",
    ];
    for (const delay of [0, 200]) {
      const r = await measure(delay);
      const p = (xs: number[], q: number) => percentile(xs, q).toFixed(2);
      const added = percentile(r.on, 0.99) - percentile(r.off, 0.99);
      lines.push(
        `  ${`${delay} ms`.padEnd(17)} ${p(r.off, 0.5).padStart(7)}  ${p(r.on, 0.5).padStart(7)}  ${p(r.off, 0.99).padStart(8)}  ${p(r.on, 0.99).padStart(7)}  ${added.toFixed(2).padStart(9)}  ${String(r.copies).padStart(7)}  ${String(r.wrong).padStart(6)}`,
      );
      if (r.wrong > 0) process.exitCode = 1;
    }
    return lines;
  },
};
