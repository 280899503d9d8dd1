import type { ServerResponse } from "node:http";
import { type Recorded, startServer } from "./http-server.ts";

/**
 * A local Kayenta: the part of its REST API Argo's kayenta provider calls, with Kayenta's shapes.
 *
 * - `GET /canaryConfig?application=…&configurationAccountName=…`: the stored configs' summaries
 *   (`id`, `name`, `updatedTimestamp`, `updatedTimestampIso`, `applications`) of that application;
 * - `POST /canary/{configId}?application=…&metricsAccountName=…&configurationAccountName=…&storageAccountName=…`
 *   with a `CanaryExecutionRequest` (`scopes`, `thresholds`): starts an execution, answers
 *   `{"canaryExecutionId": "…"}` (404 for a config it does not hold);
 * - `GET /canary/{canaryExecutionId}`: the execution's status, `complete: false` for its first
 *   `readsBeforeComplete` reads, then complete with `result.judgeResult.score.score` (404 for an
 *   unknown id).
 *
 * The score of an execution is `score(request)`, decided by the test from the request (its
 * experiment scope, say), so every answer is deterministic.
 */
export interface LocalKayenta {
  url: string;
  requests: Recorded[];
  /** The executions started, by id: the request they were started with and their reads so far. */
  executions: Map<string, { configId: string; query: URLSearchParams; request: unknown; reads: number }>;
  close(): Promise<void>;
}

export interface KayentaConfig {
  id: string;
  name: string;
  applications: string[];
}

export async function startKayenta(options: {
  configs: KayentaConfig[];
  score: (request: { scopes: Record<string, { experimentScope: { scope: string } }> }) => number;
  readsBeforeComplete?: number;
}): Promise<LocalKayenta> {
  const executions: LocalKayenta["executions"] = new Map();
  let next = 0;
  const json = (res: ServerResponse, status: number, body: unknown) => {
    res.writeHead(status, { "content-type": "application/json" });
    res.end(JSON.stringify(body));
  };
  const server = await startServer((req, res) => {
    const url = new URL(req.url, "http://kayenta");
    if (req.method === "GET" && url.pathname === "/canaryConfig") {
      const application = url.searchParams.get("application");
      json(
        res,
        200,
        options.configs
          .filter((c) => !application || c.applications.includes(application))
          .map((c) => ({
            id: c.id,
            name: c.name,
            updatedTimestamp: 1553707842000,
            updatedTimestampIso: "2019-03-27T17:30:42Z",
            applications: c.applications,
          })),
      );
      return;
    }
    const canary = /^\/canary\/([^/]+)$/.exec(url.pathname);
    if (req.method === "POST" && canary) {
      const configId = decodeURIComponent(canary[1] ?? "");
      if (!options.configs.some((c) => c.id === configId)) {
        json(res, 404, { error: "Not Found", message: `No canary config with id '${configId}' found` });
        return;
      }
      next += 1;
      const id = `01DS50WVHAWSTAQACJKB${String(next).padStart(6, "0")}`;
      executions.set(id, { configId, query: url.searchParams, request: JSON.parse(req.body), reads: 0 });
      json(res, 200, { canaryExecutionId: id });
      return;
    }
    if (req.method === "GET" && canary) {
      const execution = executions.get(decodeURIComponent(canary[1] ?? ""));
      if (!execution) {
        json(res, 404, { error: "Not Found", message: "Unable to resolve pipeline" });
        return;
      }
      execution.reads += 1;
      if (execution.reads <= (options.readsBeforeComplete ?? 0)) {
        json(res, 200, { complete: false, status: "running", stageStatus: { fetchControl: "running" } });
        return;
      }
      const score = options.score(execution.request as Parameters<typeof options.score>[0]);
      json(res, 200, {
        complete: true,
        status: "succeeded",
        result: { judgeResult: { judgeName: "NetflixACAJudge-v1.0", score: { score, classification: "" } } },
      });
      return;
    }
    json(res, 404, { error: "Not Found" });
  });
  return { url: server.url, requests: server.requests, executions, close: server.close };
}
