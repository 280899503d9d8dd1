#!/usr/bin/env node
// The `rollouts` command. The installed package runs the compiled CLI (dist/, made by
// `npm run build`) on plain Node.js. A checkout of the repository has the TypeScript sources and
// no build: there it runs them through tsx, a development dependency, so edits need no rebuild,
// and resolves the workspace's packages (the embedded runtime, local/) to their sources as well.
import { existsSync } from "node:fs";
import { register as registerHooks } from "node:module";

// The AWS SDK's notice about the Node.js versions its future releases support is noise in a CLI.
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= "true";

const sources = new URL("../cli/main.ts", import.meta.url);
let main;
if (existsSync(sources)) {
  const { register } = await import("tsx/esm/api");
  register();
  const sourceCondition = `export async function resolve(specifier, context, next) {
    return next(specifier, { ...context, conditions: [...context.conditions, "sfn-rollouts-source"] });
  }`;
  registerHooks(`data:text/javascript,${encodeURIComponent(sourceCondition)}`);
  ({ main } = await import(sources.href));
} else {
  ({ main } = await import("../dist/cli/main.js"));
}
process.exitCode = await main(process.argv.slice(2));
