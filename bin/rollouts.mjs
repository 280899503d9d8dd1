#!/usr/bin/env node
// The `rollouts` command: runs the TypeScript CLI through tsx, so no build step is needed.
import { register } from "tsx/esm/api";

// The AWS SDK versions are pinned and run on Node.js 20; its notice about future releases is noise here.
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= "true";

register();
const { main } = await import("../cli/main.ts");
process.exitCode = await main(process.argv.slice(2));
