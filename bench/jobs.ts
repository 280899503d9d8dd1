import { fork } from "node:child_process";
import { availableParallelism } from "node:os";
import { fileURLToPath } from "node:url";

/**
 * Benchmark jobs in child processes, as many at once as the machine has cores: `module` (a bench's
 * own `import.meta.url`) is started once per job with the job as JSON in the environment variable
 * `variable`, and answers with its result over IPC (see {@link answerJob}).
 */
export async function runJobs<Job, Result>(module: string, variable: string, jobs: Job[]): Promise<Result[]> {
  const results: Result[] = new Array(jobs.length);
  let next = 0;
  const worker = async () => {
    while (next < jobs.length) {
      const index = next++;
      const child = fork(fileURLToPath(module), [], {
        execArgv: ["--import", "tsx"],
        env: { ...process.env, [variable]: JSON.stringify(jobs[index]) },
        stdio: ["ignore", "pipe", "inherit", "ipc"],
      });
      results[index] = await new Promise<Result>((resolve, reject) => {
        child.once("message", (m) => resolve(m as Result));
        child.once("exit", (code) =>
          reject(new Error(`bench job ${JSON.stringify(jobs[index])} exited with ${code}`)),
        );
      });
    }
  };
  await Promise.all(
    Array.from({ length: Math.max(1, Math.min(availableParallelism(), jobs.length)) }, worker),
  );
  return results;
}

/** In a job's process: runs the job named by `variable`, sends its result to the parent and exits. */
export async function answerJob<Job, Result>(
  variable: string,
  run: (job: Job) => Promise<Result>,
): Promise<void> {
  const job = process.env[variable];
  if (!job || !process.send) return;
  const result = await run(JSON.parse(job) as Job);
  process.send(result, () => process.exit(0));
}

/** The Wilson 95% interval of a proportion k / n, in percent. */
export function wilson(k: number, n: number): { low: number; high: number } {
  const z = 1.959963984540054;
  const p = k / n;
  const center = (p + (z * z) / (2 * n)) / (1 + (z * z) / n);
  const half = (z * Math.sqrt((p * (1 - p)) / n + (z * z) / (4 * n * n))) / (1 + (z * z) / n);
  return { low: 100 * Math.max(0, center - half), high: 100 * Math.min(1, center + half) };
}
