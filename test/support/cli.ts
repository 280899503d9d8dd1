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
