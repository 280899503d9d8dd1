#!/usr/bin/env node
// `npm run build` (and `prepack`): what the published package holds besides its docs and examples.
// 1. tsc compiles statemachine/, functions/, infra/, cli/ and local/ to dist/ with declarations
//    and source maps (tsconfig.build.json), rewriting the sources' `.ts` imports to `.js`, so the
//    construct and the CLI run on plain Node.js.
// 2. esbuild bundles each Lambda handler into dist/handlers/<name>/index.mjs with the construct's
//    own bundling settings, so the installed construct deploys them as they are: a user's app needs
//    neither esbuild nor this package's TypeScript sources.
import { execFileSync } from "node:child_process";
import { rmSync } from "node:fs";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("..", import.meta.url));
const dist = `${root}dist`;

rmSync(dist, { recursive: true, force: true });
execFileSync(
  process.execPath,
  [`${root}node_modules/typescript/bin/tsc`, "-p", `${root}tsconfig.build.json`],
  {
    // Progress and compiler messages go to stderr: `npm pack --json` prints its report on stdout.
    stdio: ["ignore", process.stderr, process.stderr],
  },
);

const { build } = await import("esbuild");
const { HANDLERS, ROLLOUT_HANDLERS } = await import(`${dist}/functions/config.js`);
// The controller's functions and those a rollout gets of its own (the model router).
const files = [...Object.values(HANDLERS), ...Object.values(ROLLOUT_HANDLERS)];
const { BUNDLING } = await import(`${dist}/infra/functions.js`);

await Promise.all(
  files.map((file) =>
    build({
      entryPoints: [`${root}functions/handlers/${file}.ts`],
      outfile: `${dist}/handlers/${file}/index.mjs`,
      bundle: true,
      platform: "node",
      format: BUNDLING.format,
      target: BUNDLING.target,
      mainFields: BUNDLING.mainFields,
      minify: BUNDLING.minify,
      sourcemap: BUNDLING.sourceMap,
      sourcesContent: BUNDLING.sourcesContent,
      banner: { js: BUNDLING.banner },
      external: BUNDLING.externalModules,
      logLevel: "warning",
    }),
  ),
);
console.error(`built ${dist} (${files.length} handler bundles)`);
