import { main } from "../../cli/main.ts";

/** Runs the CLI in-process and captures what it prints. */
export async function run(...argv: string[]): Promise<{ code: number; out: string; err: string }> {
  let out = "";
  let err = "";
  const code = await main(argv, {
    out: (t) => {
      out += t.endsWith("\n") ? t : `${t}\n`;
    },
    err: (t) => {
      err += t.endsWith("\n") ? t : `${t}\n`;
    },
  });
  return { code, out, err };
}

/**
 * Runs the CLI in-process with these environment variables set (a deployed or local stack's table,
 * endpoints and credentials), and every one of them put back as it was afterwards.
 */
export async function runWithEnv(
  env: Readonly<Record<string, string | undefined>>,
  ...argv: string[]
): Promise<{ code: number; out: string; err: string }> {
  const saved = Object.fromEntries(Object.keys(env).map((k) => [k, process.env[k]]));
  for (const [k, v] of Object.entries(env)) if (v !== undefined) process.env[k] = v;
  try {
    return await run(...argv);
  } finally {
    for (const [k, v] of Object.entries(saved)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  }
}
