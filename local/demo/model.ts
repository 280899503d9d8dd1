import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";

/**
 * Stub models for the model rollout demo: logistic regressions with fixed weights over two
 * features, so every answer is deterministic and quality is measurable (the reference's stub). The
 * stream of examples is seeded; its true label comes from {@link TRUE_WEIGHTS} with 3% label noise.
 */

export type Weights = readonly [number, number, number];

/** The weights that generate the labels: the champion model has them. */
export const TRUE_WEIGHTS: Weights = [1.5, -2.0, 0.25];
const LABEL_NOISE = 0.03;

export interface Example {
  readonly id: string;
  readonly features: readonly [number, number];
  readonly label: 0 | 1;
}

export function score(weights: Weights, features: readonly [number, number]): number {
  return weights[0] * features[0] + weights[1] * features[1] + weights[2];
}

export function predict(weights: Weights, features: readonly [number, number]): 0 | 1 {
  return score(weights, features) > 0 ? 1 : 0;
}

/** A small seeded generator (mulberry32): the same stream on every machine. */
function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** `size` labelled examples from `seed`. */
export function makeDataset(seed = 7, size = 1000): Example[] {
  const rng = random(seed);
  const out: Example[] = [];
  for (let i = 0; i < size; i++) {
    const features = [
      Math.round((rng() * 4 - 2) * 1e4) / 1e4,
      Math.round((rng() * 4 - 2) * 1e4) / 1e4,
    ] as const;
    let label = predict(TRUE_WEIGHTS, features);
    if (rng() < LABEL_NOISE) label = label === 1 ? 0 : 1;
    out.push({ id: `x${i}`, features, label });
  }
  return out;
}

/** Share of `examples` a model labels correctly, and share it agrees with another model on. */
export function quality(
  weights: Weights,
  examples: readonly Example[],
  reference: Weights = TRUE_WEIGHTS,
): { accuracy: number; agreement: number } {
  let right = 0;
  let same = 0;
  for (const e of examples) {
    const p = predict(weights, e.features);
    if (p === e.label) right++;
    if (p === predict(reference, e.features)) same++;
  }
  return { accuracy: right / examples.length, agreement: same / examples.length };
}

/** A running stub model. */
export interface ModelServer {
  readonly url: string;
  readonly version: string;
  close(): Promise<void>;
}

/**
 * A model server: `POST /predict {"features": [a, b]}` → `{"label", "score", "version"}`, `GET
 * /healthz`. `delayMs` makes it slow (a heavier model, a cold cache, a hanging shadow).
 */
export async function startModel(options: {
  version: string;
  weights: Weights;
  delayMs?: number;
  port?: number;
}): Promise<ModelServer> {
  const server: Server = createServer((req, res) => {
    const headers = { "content-type": "application/json", "x-version": options.version };
    const path = (req.url ?? "/").split("?")[0];
    if (path === "/healthz") {
      res.writeHead(200, headers).end(JSON.stringify({ status: "ok", version: options.version }));
      return;
    }
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      let features: [number, number] | undefined;
      try {
        const body = JSON.parse(Buffer.concat(chunks).toString("utf8")) as { features?: unknown };
        const f = body.features;
        if (Array.isArray(f) && f.length === 2 && f.every((x) => typeof x === "number")) {
          features = [f[0] as number, f[1] as number];
        }
      } catch {
        // answered below
      }
      const answer = () => {
        if (!features) {
          res.writeHead(400, headers).end(JSON.stringify({ error: 'give {"features": [a, b]}' }));
          return;
        }
        const s = score(options.weights, features);
        res
          .writeHead(200, headers)
          .end(JSON.stringify({ label: s > 0 ? 1 : 0, score: s, version: options.version }));
      };
      if (options.delayMs) setTimeout(answer, options.delayMs);
      else answer();
    });
  });
  server.keepAliveTimeout = 1_000;
  await new Promise<void>((resolve) => server.listen(options.port ?? 0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    version: options.version,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
