import { spawnSync } from "node:child_process";
import puppeteer, { type Browser } from "puppeteer-core";

/**
 * Debian's `chromium`, headless, driven by puppeteer-core (which downloads no browser of its own):
 * what the dashboard's browser tests and `npm run screenshots` run. `scripts/preflight.mjs`
 * installs the package when `npm run test:all` starts.
 */
export function chromiumPath(): string | undefined {
  for (const command of ["chromium", "chromium-browser"]) {
    const found = spawnSync("sh", ["-c", `command -v ${command}`], { encoding: "utf8" });
    const path = found.stdout.trim();
    if (found.status === 0 && path) return path;
  }
  return undefined;
}

export async function launchChromium(): Promise<Browser> {
  const executablePath = chromiumPath();
  if (!executablePath) {
    throw new Error("no chromium binary: apt-get install -y --no-install-recommends chromium");
  }
  return puppeteer.launch({
    executablePath,
    headless: true,
    // Root in a container has no user namespace for Chromium's sandbox.
    args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--font-render-hinting=none"],
  });
}
