#!/usr/bin/env node
// `npm run build` of the embedded runtime (`local/`, the package @sfn-rollouts/local; `prepack`).
// esbuild bundles its entry points into local/dist. The runtime runs the product's own code (the
// handlers, the stores, the spec language), so every import that leaves local/ becomes an import
// of the installed sfn-rollouts (`sfn-rollouts/internal/<path>`, its compiled dist/) instead of a
// copy: one instance of each module, the same classes on both sides. Packages stay external.
import { existsSync, rmSync } from "node:fs";
import { relative, resolve, sep } from "node:path";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("..", import.meta.url));
const local = resolve(root, "local");
const dist = resolve(local, "dist");

/** A relative import that resolves outside local/: the product's module, by its export path. */
const product = {
  name: "sfn-rollouts-product",
  setup(build) {
    build.onResolve({ filter: /^\.\.?\// }, (args) => {
      const target = resolve(args.resolveDir, args.path);
      if (target === local || target.startsWith(`${local}${sep}`)) return undefined;
      if (!target.startsWith(`${root}`) || !existsSync(target)) {
        return {
          errors: [
            { text: `${args.path} (from ${args.importer}) is neither the runtime's nor the product's` },
          ],
        };
      }
      const path = relative(root, target).split(sep).join("/").replace(/\.ts$/, "");
      return { path: `sfn-rollouts/internal/${path}`, external: true };
    });
  },
};

rmSync(dist, { recursive: true, force: true });
const { build } = await import("esbuild");
await build({
  entryPoints: { simulate: resolve(local, "simulate/index.ts") },
  outdir: dist,
  bundle: true,
  splitting: true,
  format: "esm",
  platform: "node",
  target: "node20",
  packages: "external",
  sourcemap: true,
  plugins: [product],
  logLevel: "warning",
});
console.error(`built ${dist}`);
