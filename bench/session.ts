/**
 * What the benchmark entry points (bench/run.ts, bench/semaphore.ts) do around their runs: the libraries
 * asked for and their order, the progress log, the report's first line, the results files and the exit
 * code.
 */
import { cpus, loadavg } from 'node:os';
import { resolve } from 'node:path';
import { writeAtomically } from './chart';
import { hr } from './clock';
import type { Target } from './report';

const RESULTS = resolve(__dirname, 'results');

/** The libraries of a `--libs=a,b` argument, each of them one of `known`. */
export function libsArg<L extends string>(arg: string, known: readonly L[]): L[] {
  const libs = arg.slice('--libs='.length).split(',') as L[];
  const unknown = libs.filter((l) => !known.includes(l));
  if (unknown.length)
    throw new Error(`unknown libraries: ${unknown.join(', ')} (known: ${known.join(', ')})`);
  return libs;
}

/** Round r runs the libraries starting from the r-th, so no library always runs first or last. */
export const rotate = <T>(items: T[], by: number): T[] => items.map((_, i) => items[(i + by) % items.length]);

const loadAverages = (): string =>
  loadavg()
    .map((l) => l.toFixed(2))
    .join(' ');

/**
 * A progress log on stderr (stdout is the report), each line stamped with the seconds since the start;
 * its first line says what runs and how busy the machine already is.
 */
export function startLog(what: string): (line: string) => void {
  const t0 = hr();
  const log = (line: string) =>
    process.stderr.write(`[${((hr() - t0) / 1000).toFixed(0).padStart(4)} s] ${line}\n`);
  log(`${what} run on ${cpus().length} CPUs, load average ${loadAverages()}`);
  return log;
}

/** The report's first line: which benchmark, when, and on what machine, how busy at the end. */
export const headline = (title: string, mode: string, started: Date): string =>
  `${title}, ${mode} mode, ${started.toISOString()}, ${cpus().length} CPUs ` +
  `(${cpus()[0]?.model ?? 'unknown'}), load average at the end ${loadAverages()}`;

/**
 * The results file's first fields: the mode, when the run started and finished, the chart's caption
 * where there is one, and the machine.
 */
export const reportHead = (mode: string, started: Date, finished: Date, caption?: string) => ({
  mode,
  startedAt: started.toISOString(),
  finishedAt: finished.toISOString(),
  durationS: (finished.getTime() - started.getTime()) / 1000,
  ...(caption === undefined ? {} : { caption }),
  machine: { cpus: cpus().length, model: cpus()[0]?.model, node: process.version, loadavgAtEnd: loadavg() },
});

/**
 * Writes the report to bench/results/<mode>-[<bench>-]<timestamp>.json and
 * bench/results/latest-[<bench>-]<mode>.json, and says so. A run of some scenarios, libraries or rounds
 * only (not `complete`) writes latest-…-partial.json instead: it must not replace the complete run the
 * docs quote.
 */
export function writeResults(
  report: object,
  run: { bench?: string; mode: string; started: Date; complete: boolean },
): void {
  const prefix = run.bench ? `${run.bench}-` : '';
  const name = `${run.mode}-${prefix}${run.started.toISOString().replace(/[:.]/g, '-')}.json`;
  const latest = `latest-${prefix}${run.mode}${run.complete ? '' : '-partial'}.json`;
  // JSON has no Infinity or NaN: such figures are written as strings.
  const json = `${JSON.stringify(report, (_k, v) => (typeof v === 'number' && !Number.isFinite(v) ? String(v) : v), 2)}\n`;
  writeAtomically(resolve(RESULTS, name), json);
  writeAtomically(resolve(RESULTS, latest), json);
  console.log(`\nwrote bench/results/${name}, bench/results/${latest}`);
}

/** In smoke and quick mode (CI runs the smoke) a broken gated target fails the process; a full run only reports. */
export function failOnBroken(mode: string, broken: readonly Target[]): void {
  if (mode !== 'full' && broken.length) {
    console.error(`\n${broken.length} correctness check(s) failed`);
    process.exitCode = 1;
  }
}
