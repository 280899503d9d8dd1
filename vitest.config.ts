import { existsSync, readdirSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join, relative, sep } from "node:path";
import { configDefaults, defineConfig } from "vitest/config";

/**
 * The tests that start real programs or take minutes: integration on the embedded runtime, the
 * demo, real Prometheus, Chromium, kubectl, moto's server (the adapters against an AWS peer,
 * `test/aws/`), the package's tarball, the API reference (typedoc) and the handlers' bundling
 * (esbuild). `npm run test:all` runs them with the rest; `npm test` does not.
 */
const FULL = [
  "test/integration/**",
  "test/aws/**",
  "test/package/**",
  "test/docs/api.test.ts",
  "test/cli/dashboard-browser.test.ts",
  "test/local/prometheus.test.ts",
  "test/metrics/prometheus.test.ts",
  "test/local/kube/kubectl.test.ts",
  "test/infra/bundle.test.ts",
  "test/infra/cfn-lint.test.ts",
  "test/statemachine/fuzz-full.test.ts",
  "test/soak/soak.test.ts",
];

/**
 * What changes a test process for the files after it: a patched AWS SDK client
 * (`aws-sdk-client-mock` patches the client class itself), module mocks, stubbed environment
 * variables or globals, fake timers, environment variables set by hand.
 */
const GLOBAL_CHANGE =
  /\bmockClient\(|\bvi\.(mock|doMock|stubEnv|stubGlobal|useFakeTimers)\(|process\.env\.[A-Z_]+\s*=[^=]|Object\.assign\(process\.env/;

/** Resolves a module of the test-support package as Node.js does: through its link and its exports. */
const requireHere = createRequire(join(process.cwd(), "package.json"));

/** Where `file` imports the test-support module `specifier` from, relative to the repository. */
function supportModule(file: string, specifier: string): string {
  let resolved: string;
  try {
    resolved = requireHere.resolve(specifier);
  } catch (cause) {
    throw new Error(`${file} imports ${specifier}, which does not resolve (npm ci links it)`, { cause });
  }
  return relative(process.cwd(), resolved).split(sep).join("/");
}

/**
 * The test files that change nothing global, found by reading them and the test modules they
 * import (the test-support package's, by name, and their neighbours). They share one process per
 * worker (`isolate: false`), so the modules they load (the compiler, aws-cdk-lib, the judges) load
 * once per worker instead of once per file; every other test file gets a fresh process, as
 * before. A new test that mocks lands in the isolated project without anyone listing it.
 */
function sharedTests(): string[] {
  const changes = new Map<string, boolean>();
  const changesGlobals = (path: string): boolean => {
    const known = changes.get(path);
    if (known !== undefined) return known;
    changes.set(path, false); // a cycle of imports adds nothing
    const text = readFileSync(path, "utf8");
    // The test's own helpers, not the product: the product changes nothing global. A file next to
    // the test (`./x.ts`, `../x.ts`) or a module of the test-support package (test/support/).
    const nearby = [...text.matchAll(/from "(\.\.?\/[\w./-]+\.ts)"/g)].map((m) =>
      join(path, "..", m[1] as string),
    );
    const packaged = [...text.matchAll(/from "(@sfn-rollouts\/test-support\/[\w./-]+)"/g)].map((m) =>
      supportModule(path, m[1] as string),
    );
    const supports = [...nearby, ...packaged].filter((p) => p.startsWith("test/") && existsSync(p));
    const verdict = GLOBAL_CHANGE.test(text) || supports.some(changesGlobals);
    changes.set(path, verdict);
    return verdict;
  };
  const files = readdirSync("test", { recursive: true, encoding: "utf8" })
    .filter((f) => f.endsWith(".test.ts"))
    .map((f) => join("test", f));
  return files.filter((f) => !changesGlobals(f)).sort();
}

const SHARED = sharedTests();

export default defineConfig({
  // The workspace's packages (the embedded runtime, local/) resolve to their sources, as the
  // product's own exports do for tsc (`customConditions`).
  ssr: { resolve: { conditions: ["sfn-rollouts-source", "node", "development|production"] } },
  test: {
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: "forks",
    // Vitest's default leaves a core free; the tests wait on their own child processes and
    // sockets often enough that a worker per core is faster on 2 cores (91 s against 117 s for
    // the everyday tier).
    maxWorkers: "100%",
    projects: [
      {
        extends: true,
        test: {
          name: "shared",
          include: SHARED,
          exclude: [...configDefaults.exclude, ...FULL],
          isolate: false,
        },
      },
      {
        extends: true,
        test: {
          name: "isolated",
          include: ["test/**/*.test.ts"],
          exclude: [...configDefaults.exclude, ...FULL, ...SHARED],
        },
      },
      {
        extends: true,
        // These tests start processes, synthesize stacks and run whole rollouts: on a machine whose
        // cores are busy with other work they take several times as long. Their time limits are
        // there to end a hang, not to measure speed (that is `npm run bench`), so they are wide.
        test: { name: "full", include: FULL.map(asTests), testTimeout: 300_000, hookTimeout: 900_000 },
      },
    ],
  },
});

/** A folder's glob (`dir/**`) as the test files in it; a file stays itself. */
function asTests(glob: string): string {
  return glob.endsWith("/**") ? `${glob}/*.test.ts` : glob;
}
