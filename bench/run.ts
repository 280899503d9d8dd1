/**
 * `npm run bench`: runs every benchmark module in sequence and prints what it measured.
 * Add a module by importing it and appending it to `benches`. `npm run bench -- NAME...` runs
 * only the named ones.
 */
import { bench as cli } from "./cli.ts";
import { bench as judged } from "./judged.ts";
import { bench as judges } from "./judges.ts";
import { bench as loader } from "./loader.ts";
import { bench as mirror } from "./mirror.ts";
import { bench as runtime } from "./runtime.ts";
import { bench as simulate } from "./simulate.ts";

/** One benchmark: a name and a run that returns the lines to print (and may set process.exitCode). */
export interface Bench {
  readonly name: string;
  run(): Promise<string[]> | string[];
}

const benches: Bench[] = [judges, judged, runtime, simulate, cli, mirror, loader];

const only = process.argv.slice(2);
for (const bench of benches) {
  if (only.length > 0 && !only.includes(bench.name)) continue;
  const started = performance.now();
  console.log(`## ${bench.name}`);
  for (const line of await bench.run()) console.log(line);
  console.log(`(${bench.name}: ${((performance.now() - started) / 1000).toFixed(1)} s)\n`);
}
