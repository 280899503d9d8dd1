import { randomBytes, timingSafeEqual } from "node:crypto";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { TaskTokenError } from "../../functions/abort/task-tokens.ts";
import {
  ConcurrentUpdateError,
  StoredItemInvalidError,
  StoreUnavailableError,
} from "../../functions/store/errors.ts";
import { ExecutionStartError } from "../../functions/trigger/executions.ts";
import {
  abortRollout,
  type OperateDeps,
  type OperateOutcome,
  promoteRollout,
  retryRollout,
} from "../../functions/workflow/operate.ts";
import { RolloutsError } from "../../statemachine/errors.ts";
import { RolloutMissingError } from "../commands/operate-actions.ts";
import {
  contentTypeRefusal,
  crossOriginRefusal,
  hostRefusal,
  mediaType,
  ownHosts,
  type Refusal,
} from "../http-guard.ts";
import { ASSETS, type AssetName, asset } from "./assets.ts";
import { loadPageView } from "./load.ts";
import {
  ACTIONS,
  type Action,
  type PageOptions,
  renderConfirmPage,
  renderErrorPage,
  renderListPage,
  renderRolloutPage,
} from "./page.ts";

/**
 * `rollouts dashboard`'s web server: the list and rollout pages (`page.ts`) read through the
 * same store code as `rollouts get`, and the Promote / Promote full / Abort / Retry buttons call
 * the same domain functions as `rollouts promote`, `abort` and `retry`. It is as safe as the CLI
 * on a machine whose browser visits other sites:
 *
 * - it listens on 127.0.0.1 only;
 * - every request must name it in `Host` (no DNS rebinding) and must not come from another origin
 *   (`Origin`, `Sec-Fetch-Site`): `local/http-guard.ts`, shared with the local proxy's admin API;
 * - an operation is a POST of a form (`application/x-www-form-urlencoded`) that carries the
 *   server's random token, which only its own pages hold; a first POST answers with a
 *   confirmation page, and only the confirmed one acts;
 * - every page is built by the `html` tag, which escapes every value, and is served with a
 *   Content-Security-Policy that runs only the dashboard's own script.
 */

export interface DashboardOptions {
  deps: OperateDeps;
  /** The port on 127.0.0.1; 0 picks a free one. */
  port: number;
  /** Milliseconds between the page's refreshes. */
  refreshMs?: number;
  /** Epoch ms now (tests pass a virtual clock); default `deps.clock`. */
  now?: () => number;
  /** Where unexpected failures are reported (they are answered with a 500 page). */
  log?: (line: string) => void;
}

export interface RunningDashboard {
  /** `http://127.0.0.1:PORT`. */
  url: string;
  port: number;
  close(): Promise<void>;
}

/** The address it listens on: the loopback interface only. */
export const DASHBOARD_HOST = "127.0.0.1";

/** A form is a few fields; a larger body is refused before it is read whole. */
const MAX_BODY_BYTES = 16 * 1024;
/** Notices kept for the redirect that follows an operation. */
const MAX_NOTICES = 50;

const SECURITY_HEADERS = {
  "content-security-policy":
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
  "x-content-type-options": "nosniff",
  "x-frame-options": "DENY",
  // Not `no-referrer`: under it Chromium sends `Origin: null` with the page's own form posts.
  "referrer-policy": "same-origin",
  "cache-control": "no-store",
};

/** The port is taken, or cannot be bound: a line for the person who started the command. */
export class DashboardListenError extends RolloutsError {
  override readonly name = "DashboardListenError";
}

export async function startDashboard(options: DashboardOptions): Promise<RunningDashboard> {
  const dashboard: Dashboard = {
    deps: options.deps,
    csrf: randomBytes(24).toString("base64url"),
    notices: new Map(),
    refreshMs: options.refreshMs ?? 2000,
    now: options.now ?? (() => options.deps.clock.now()),
    port: options.port,
  };
  const log = options.log ?? ((line: string) => process.stderr.write(`${line}\n`));
  const server = createServer((request, response) => {
    handle(dashboard, request, response).catch((error: unknown) =>
      answerFailure(dashboard, response, error, log),
    );
  });
  await listen(server, options.port);
  dashboard.port = (server.address() as AddressInfo).port;
  return {
    url: `http://${DASHBOARD_HOST}:${dashboard.port}`,
    port: dashboard.port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/** What every route reads: the store, the form token its pages carry, the notices kept for redirects. */
interface Dashboard {
  deps: OperateDeps;
  /** The random token of this server's forms, which only its own pages hold. */
  csrf: string;
  /** The outcome of each operation, by the id its redirect names, until `MAX_NOTICES` newer ones. */
  notices: Map<string, OperateOutcome>;
  refreshMs: number;
  now: () => number;
  /** The port it listens on, once it does: the `Host` a request must name. */
  port: number;
}

/** The options every page is rendered with: the time, the form token, and a notice when there is one. */
function pageOptions(dashboard: Dashboard, notice?: OperateOutcome): PageOptions {
  return {
    now: dashboard.now(),
    mode: { kind: "dashboard", csrf: dashboard.csrf, refreshMs: dashboard.refreshMs },
    notice,
  };
}

/** Every answer goes out with the security headers and its length. */
function send(response: ServerResponse, status: number, type: string, body: string, extra = {}): void {
  response.writeHead(status, {
    ...SECURITY_HEADERS,
    "content-type": type,
    "content-length": Buffer.byteLength(body),
    ...extra,
  });
  response.end(body);
}

/** A page the `html` tag built, served as HTML. */
function page(response: ServerResponse, status: number, body: string): void {
  send(response, status, "text/html; charset=utf-8", body);
}

/** A refused request gets its reason as one line of plain text. */
function refuse(response: ServerResponse, refusal: Refusal | { status: number; message: string }): void {
  send(response, refusal.status, "text/plain; charset=utf-8", `${refusal.message}\n`);
}

/**
 * Refuses a request that names another host or comes from another origin, then routes the rest:
 * the pages and assets by GET, an operation by POST.
 */
async function handle(
  dashboard: Dashboard,
  request: IncomingMessage,
  response: ServerResponse,
): Promise<void> {
  const hostRefused = hostRefusal(request, ownHosts(dashboard.port));
  if (hostRefused) return refuse(response, hostRefused);
  // The page's own origin is the one it was reached by (127.0.0.1 or localhost): any other is refused.
  const originRefused = crossOriginRefusal(request, `http://${request.headers.host?.toLowerCase()}`);
  if (originRefused) return refuse(response, originRefused);

  const url = new URL(request.url ?? "/", "http://dashboard.invalid");
  const parts = url.pathname.split("/").filter(Boolean).map(decodeSegment);
  if (parts.some((p) => p === undefined)) return refuse(response, { status: 400, message: "malformed path" });
  const [first, name, action, ...rest] = parts as string[];

  if (request.method === "GET") {
    if (parts.length === 0) return listPage(dashboard, response);
    if (first === "assets" && name !== undefined && action === undefined && Object.hasOwn(ASSETS, name)) {
      return send(response, 200, ASSETS[name as AssetName].type, asset(name as AssetName));
    }
    if (first === "rollouts" && name !== undefined && action === undefined) {
      return rolloutPage(dashboard, response, name, url);
    }
    return page(
      response,
      404,
      renderErrorPage("Not found", `Nothing at ${url.pathname}`, pageOptions(dashboard)),
    );
  }
  if (
    request.method === "POST" &&
    first === "rollouts" &&
    name !== undefined &&
    action !== undefined &&
    rest.length === 0
  ) {
    return operate(dashboard, request, response, name, action);
  }
  return refuse(response, { status: 405, message: `${request.method} ${url.pathname} is not served` });
}

/** `GET /`: every rollout in the table. */
async function listPage(dashboard: Dashboard, response: ServerResponse): Promise<void> {
  page(response, 200, renderListPage(await dashboard.deps.store.list(), pageOptions(dashboard)));
}

/** `GET /rollouts/NAME`: one rollout, with the notice of the operation that redirected here, if any. */
async function rolloutPage(
  dashboard: Dashboard,
  response: ServerResponse,
  name: string,
  url: URL,
): Promise<void> {
  const notice = dashboard.notices.get(url.searchParams.get("notice") ?? "");
  const view = await loadPageView(dashboard.deps, name);
  page(response, 200, renderRolloutPage(view, pageOptions(dashboard, notice)));
}

/**
 * `POST /rollouts/NAME/ACTION`: a form carrying the server's token. Unconfirmed, it answers with
 * the confirmation page; confirmed, it acts and redirects to the rollout's page with the outcome.
 */
async function operate(
  dashboard: Dashboard,
  request: IncomingMessage,
  response: ServerResponse,
  name: string,
  action: string,
): Promise<void> {
  if (!Object.hasOwn(ACTIONS, action))
    return refuse(response, { status: 404, message: `unknown operation "${action}"` });
  const typeRefused = contentTypeRefusal(request, ["application/x-www-form-urlencoded"]);
  if (typeRefused) return refuse(response, typeRefused);
  const form = await readForm(request);
  if (form === undefined)
    return refuse(response, { status: 413, message: `the form is larger than ${MAX_BODY_BYTES} bytes` });
  if (!sameToken(form.get("csrf"), dashboard.csrf))
    return refuse(response, {
      status: 403,
      message: "request refused: the form does not carry this dashboard's token (reload the page)",
    });
  const operation = action as Action;
  if (form.get("confirm") !== "yes") {
    const view = await loadPageView(dashboard.deps, name);
    return page(
      response,
      200,
      renderConfirmPage(view.item, operation, { ...pageOptions(dashboard), csrf: dashboard.csrf }),
    );
  }
  const outcome = await perform(dashboard.deps, name, operation, form.get("reason") ?? "");
  response.writeHead(303, {
    ...SECURITY_HEADERS,
    location: `/rollouts/${encodeURIComponent(name)}?notice=${keepNotice(dashboard, outcome)}`,
    "content-length": 0,
  });
  response.end();
}

/** Keeps an operation's outcome for the page its redirect shows, dropping the oldest past `MAX_NOTICES`. */
function keepNotice(dashboard: Dashboard, outcome: OperateOutcome): string {
  const id = randomBytes(9).toString("base64url");
  dashboard.notices.set(id, outcome);
  for (const key of dashboard.notices.keys()) {
    if (dashboard.notices.size <= MAX_NOTICES) break;
    dashboard.notices.delete(key);
  }
  return id;
}

/**
 * A request that failed: a missing rollout is a 404 page, a store or Step Functions failure a 502
 * page naming it, anything else a 500 page (and the stack in the terminal, where it can be read).
 */
function answerFailure(
  dashboard: Dashboard,
  response: ServerResponse,
  error: unknown,
  log: (line: string) => void,
): void {
  if (response.headersSent) {
    response.destroy();
    return;
  }
  if (error instanceof RolloutMissingError) {
    page(
      response,
      404,
      renderErrorPage(
        "Rollout not found",
        `There is no rollout "${error.message}" in the table.`,
        pageOptions(dashboard),
      ),
    );
    return;
  }
  const known = isNamedFailure(error);
  if (!known) log(`rollouts dashboard: ${(error as Error)?.stack ?? String(error)}`);
  page(
    response,
    known ? 502 : 500,
    renderErrorPage(
      known ? "The store or Step Functions did not answer" : "Internal error",
      known
        ? `${(error as Error).name}: ${(error as Error).message}`
        : "The dashboard failed; see its terminal.",
      pageOptions(dashboard),
    ),
  );
}

/** Listens on the loopback interface; a port in use or refused is a line for the person who started it. */
function listen(server: Server, port: number): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    server.once("error", (error: NodeJS.ErrnoException) =>
      reject(
        new DashboardListenError(
          error.code === "EADDRINUSE"
            ? `port ${port} on ${DASHBOARD_HOST} is in use: pass --port with another port (0 picks a free one)`
            : `cannot listen on ${DASHBOARD_HOST}:${port}: ${error.message}`,
        ),
      ),
    );
    server.listen(port, DASHBOARD_HOST, () => resolve());
  });
}

/** What a confirmed operation does: the same domain calls as the CLI's commands. */
function perform(deps: OperateDeps, name: string, action: Action, reason: string): Promise<OperateOutcome> {
  switch (action) {
    case "promote":
      return promoteRollout(deps, name, false);
    case "promote-full":
      return promoteRollout(deps, name, true);
    case "abort":
      return abortRollout(deps, name, reason.trim() === "" ? undefined : reason.trim());
    case "retry":
      return retryRollout(deps, name);
  }
}

/** The failures the CLI reports as a line rather than a bug (`operate-actions.ts`). */
function isNamedFailure(error: unknown): boolean {
  return (
    error instanceof StoreUnavailableError ||
    error instanceof ConcurrentUpdateError ||
    error instanceof TaskTokenError ||
    error instanceof ExecutionStartError ||
    error instanceof StoredItemInvalidError
  );
}

function decodeSegment(segment: string): string | undefined {
  try {
    return decodeURIComponent(segment);
  } catch {
    return undefined;
  }
}

/** The form's fields, or undefined when the body is too large. */
async function readForm(request: IncomingMessage): Promise<URLSearchParams | undefined> {
  if (mediaType(request.headers["content-type"]) === undefined) return new URLSearchParams();
  const chunks: Buffer[] = [];
  let size = 0;
  // Read to the end even past the limit (keeping nothing more), so the refusal can be answered.
  for await (const chunk of request as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size <= MAX_BODY_BYTES) chunks.push(chunk);
  }
  if (size > MAX_BODY_BYTES) return undefined;
  return new URLSearchParams(Buffer.concat(chunks).toString("utf8"));
}

function sameToken(given: string | null, expected: string): boolean {
  if (given === null) return false;
  const a = Buffer.from(given);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}
