import { request as httpRequest } from "node:http";
import { type DemoRollouts, startDemoRollouts } from "@sfn-rollouts/test-support/demo-rollouts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type RunningDashboard, startDashboard } from "../../cli/dashboard/server.ts";

/**
 * `rollouts dashboard`'s server over the demo's rollouts in the embedded runtime: what it serves,
 * and what it refuses — another Host (DNS rebinding), another origin, a form without its token, a
 * body that is not a form — so that no page of another site can promote or abort a rollout.
 */

let demo: DemoRollouts;
let dashboard: RunningDashboard;

beforeAll(async () => {
  demo = await startDemoRollouts();
  dashboard = await startDashboard({ deps: demo.deps, port: 0, refreshMs: 500, log: () => {} });
}, 120_000);

afterAll(async () => {
  await dashboard?.close();
  await demo?.close();
});

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/** A raw HTTP request, so that the test sets `Host` and `Origin` as a browser or an attacker would. */
function send(
  method: string,
  path: string,
  options: { headers?: Record<string, string>; body?: string } = {},
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      { host: "127.0.0.1", port: dashboard.port, method, path, headers: options.headers ?? {} },
      (res) => {
        let body = "";
        res.setEncoding("utf8");
        res.on("data", (c: string) => {
          body += c;
        });
        res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
      },
    );
    req.on("error", reject);
    req.end(options.body);
  });
}

const form = (fields: Record<string, string>) => ({
  "content-type": "application/x-www-form-urlencoded",
  origin: dashboard.url,
  body: new URLSearchParams(fields).toString(),
});

async function token(): Promise<string> {
  const page = await send("GET", "/rollouts/demo-approval");
  const m = /name="csrf" value="([^"]+)"/.exec(page.body);
  if (!m?.[1]) throw new Error("no token on the page");
  return m[1];
}

function post(path: string, fields: Record<string, string>, headers: Record<string, string> = {}) {
  const { body, ...formHeaders } = form(fields);
  return send("POST", path, { headers: { ...formHeaders, ...headers }, body });
}

const phase = async (name: string) => (await demo.store.get(name))?.phase;

describe("rollouts dashboard: what it serves", () => {
  it("listens on 127.0.0.1 and serves the list, a rollout page and its assets under a strict policy", async () => {
    expect(dashboard.url).toBe(`http://127.0.0.1:${dashboard.port}`);
    const list = await send("GET", "/");
    expect(list.status).toBe(200);
    expect(list.body).toContain('<a href="/rollouts/demo">demo</a>');
    expect(list.headers["content-security-policy"]).toContain("script-src 'self'");
    expect(list.headers["content-security-policy"]).toContain("frame-ancestors 'none'");
    expect(list.headers["x-content-type-options"]).toBe("nosniff");
    const page = await send("GET", "/rollouts/demo");
    expect(page.body).toContain("Rollout aborted update to revision 4");
    const script = await send("GET", "/assets/dashboard.js");
    expect(script.headers["content-type"]).toBe("text/javascript; charset=utf-8");
    expect(script.body).toContain("DOMParser");
    expect((await send("GET", "/assets/../server.ts")).status).toBe(404);
    // Only the assets themselves, not what every object inherits.
    expect((await send("GET", "/assets/toString")).status).toBe(404);
    expect((await send("GET", "/assets/constructor")).status).toBe(404);
  });

  it("answers an unknown rollout and an unknown path with 404 pages", async () => {
    const missing = await send("GET", "/rollouts/nope");
    expect(missing.status).toBe(404);
    expect(missing.body).toContain("There is no rollout &quot;nope&quot; in the table.");
    expect((await send("GET", "/elsewhere")).status).toBe(404);
    expect((await send("DELETE", "/rollouts/demo")).status).toBe(405);
  });
});

describe("rollouts dashboard: what it refuses", () => {
  it("refuses a Host that is not its own (DNS rebinding), even for a page", async () => {
    const answer = await send("GET", "/", { headers: { host: `rebind.example:${dashboard.port}` } });
    expect(answer.status).toBe(403);
    expect(answer.body).toContain("Host rebind.example");
  });

  it("a cross-site POST cannot abort, even with the token", async () => {
    const csrf = await token();
    const attempts: Array<Record<string, string>> = [
      { origin: "http://evil.example" },
      { origin: "null" },
      { "sec-fetch-site": "cross-site" },
      { "sec-fetch-site": "same-site" },
    ];
    for (const headers of attempts) {
      const answer = await post(
        "/rollouts/demo-approval/abort",
        { csrf, confirm: "yes", reason: "x" },
        headers,
      );
      expect(answer.status, JSON.stringify(headers)).toBe(403);
    }
    expect(await phase("demo-approval")).toBe("Paused");
  });

  it("a same-origin POST without the page's token, or with another, cannot act", async () => {
    expect((await post("/rollouts/demo-approval/abort", { confirm: "yes" })).status).toBe(403);
    const refused = await post("/rollouts/demo-approval/promote", { csrf: "guessed", confirm: "yes" });
    expect(refused.status).toBe(403);
    expect(refused.body).toContain("does not carry this dashboard's token");
    expect(await phase("demo-approval")).toBe("Paused");
  });

  it("takes forms only: a text/plain or JSON body is refused with 415, an oversized one with 413", async () => {
    const csrf = await token();
    const plain = await send("POST", "/rollouts/demo-approval/abort", {
      headers: { "content-type": "text/plain", origin: dashboard.url },
      body: `csrf=${csrf}&confirm=yes`,
    });
    expect(plain.status).toBe(415);
    const big = await post("/rollouts/demo-approval/abort", {
      csrf,
      confirm: "yes",
      reason: "x".repeat(20_000),
    });
    expect(big.status).toBe(413);
    expect(await phase("demo-approval")).toBe("Paused");
  });

  it("asks first: an unconfirmed POST answers a confirmation page and changes nothing", async () => {
    const answer = await post("/rollouts/demo-approval/abort", { csrf: await token() });
    expect(answer.status).toBe(200);
    expect(answer.body).toContain("Abort rollout demo-approval?");
    expect(await phase("demo-approval")).toBe("Paused");
  });

  it.each(["constructor", "__proto__", "toString", "hasOwnProperty", "valueOf"])(
    "refuses the inherited name %s as an operation, with the page's token and confirmed",
    async (name) => {
      const csrf = await token();
      const forms: Record<string, string>[] = [{ csrf }, { csrf, confirm: "yes" }];
      for (const form of forms) {
        const answer = await post(`/rollouts/demo-approval/${name}`, form);
        expect(answer.status).toBe(404);
        expect(answer.body).toContain(`unknown operation "${name}"`);
      }
      expect(await phase("demo-approval")).toBe("Paused");
    },
  );
});

describe("rollouts dashboard: an operation", () => {
  it("a confirmed same-origin abort goes through the abort channel: the rollout ends Degraded with its reason", async () => {
    const answer = await post("/rollouts/demo-approval/abort", {
      csrf: await token(),
      confirm: "yes",
      reason: "checkout <errors> on call",
    });
    expect(answer.status).toBe(303);
    expect(answer.headers.location).toMatch(/^\/rollouts\/demo-approval\?notice=[\w-]+$/);
    const shown = await send("GET", String(answer.headers.location));
    expect(shown.body).toMatch(/class="notice ok"[^>]*>[^<]*abort/i);
    const ending = await demo.approval.run(demo.approvalExecution);
    expect(ending).toEqual({
      state: "Aborted",
      message: "RolloutAborted: Rollout aborted update to revision 2: checkout <errors> on call",
    });
    const page = await send("GET", "/rollouts/demo-approval");
    expect(page.body).toContain("checkout &lt;errors&gt; on call");
    expect(await phase("demo-approval")).toBe("Degraded");
  });

  it("a refused operation is shown as refused: promoting a Degraded rollout", async () => {
    const answer = await post("/rollouts/demo/promote", { csrf: await token(), confirm: "yes" });
    const shown = await send("GET", String(answer.headers.location));
    expect(shown.body).toContain('class="notice refused"');
    expect(shown.body).toContain("is Degraded: nothing to promote");
  });
});
