/**
 * The deterministic simulation's command line (docs/guarantees.md, "The deterministic simulation").
 *
 *   npm run sim -- --seed N            replays run N and prints its history (--verbose: every command)
 *   npm run sim -- --runs 100000       explores seeds 1..100000 (--from S to start elsewhere; --seeds a,b,c)
 *   npm run sim:smoke                  10,000 seeds in two processes: the CI smoke (--time-limit S stops early)
 *
 * Narrowing: --topology single|quorum, --kind mutex|semaphore|rw. --strict-evictions excuses no eviction
 * of a lock's holder state, which breaks exclusion as documented: a self-test that the checks fail. A failed run prints its seed, the
 * command that replays it, and its history shortened: the calls and faults it still fails without
 * taken out (--ops / --faults name the ones kept, to replay the shortened run).
 */
import { fork } from 'node:child_process';
import type { Kind, Plan, Topology } from './plan';
import { VirtualTime } from './virtual-time';

interface Args {
  seed?: number;
  /** Explores these seeds rather than a range. */
  seeds?: number[];
  runs: number;
  from: number;
  timeLimit: number;
  workers: number;
  topology?: Topology;
  kind?: Kind;
  ops?: number[];
  faults?: number[];
  history: boolean;
  verbose: boolean;
  strict: boolean;
  worker: boolean;
}

/** Real seconds (Date.now and performance.now read virtual time during runs). */
const realSeconds = () => Number(process.hrtime.bigint()) / 1e9;

function parse(argv: string[]): Args {
  const args: Args = {
    runs: 1000,
    from: 1,
    timeLimit: Number.POSITIVE_INFINITY,
    workers: 1,
    history: false,
    verbose: false,
    strict: false,
    worker: false,
  };
  for (let i = 0; i < argv.length; i++) {
    const value = () => {
      const v = argv[++i];
      if (v === undefined) throw new Error(`${argv[i - 1]} needs a value`);
      return v;
    };
    const list = () =>
      value()
        .split(',')
        .filter((s) => s !== '')
        .map(Number);
    switch (argv[i]) {
      case '--seed':
        args.seed = Number(value());
        break;
      case '--seeds':
        args.seeds = list();
        break;
      case '--runs':
        args.runs = Number(value());
        break;
      case '--from':
        args.from = Number(value());
        break;
      case '--time-limit':
        args.timeLimit = Number(value());
        break;
      case '--workers':
        args.workers = Number(value());
        break;
      case '--topology':
        args.topology = value() as Topology;
        break;
      case '--kind':
        args.kind = value() as Kind;
        break;
      case '--ops':
        args.ops = list();
        break;
      case '--faults':
        args.faults = list();
        break;
      case '--history':
        args.history = true;
        break;
      case '--verbose':
        args.verbose = true;
        args.history = true;
        break;
      case '--strict-evictions':
        args.strict = true;
        break;
      case '--worker':
        args.worker = true;
        break;
      default:
        throw new Error(`unknown argument ${argv[i]}: see sim/run.ts`);
    }
  }
  return args;
}

/** The lock's code is loaded only once the clock is virtual, so nothing it sets up reads the real one. */
let loading: ReturnType<typeof loadOnce> | undefined;
function load() {
  loading ??= loadOnce();
  return loading;
}

async function loadOnce() {
  const time = new VirtualTime();
  time.install();
  const { runWorld } = await import('./world');
  const { drawPlan } = await import('./plan');
  const { shrink } = await import('./shrink');
  return { time, runWorld, drawPlan, shrink };
}

type Loaded = Awaited<ReturnType<typeof load>>;

function narrowed(plan: Plan, ops?: number[], faults?: number[]): Plan {
  return {
    ...plan,
    ops: ops ? plan.ops.filter((o) => ops.includes(o.id)) : plan.ops,
    faults: faults ? plan.faults.filter((f) => faults.includes(f.id)) : plan.faults,
  };
}

function replayCommand(plan: Plan, args: Args, full: Plan): string {
  const only = [
    args.topology ? `--topology ${args.topology}` : '',
    args.kind ? `--kind ${args.kind}` : '',
    args.strict ? '--strict-evictions' : '',
    plan.ops.length < full.ops.length ? `--ops ${plan.ops.map((o) => o.id).join(',')}` : '',
    plan.faults.length < full.faults.length
      ? `--faults ${plan.faults.map((f) => f.id).join(',') || ','}`
      : '',
  ].filter(Boolean);
  return `npm run sim -- --seed ${plan.seed}${only.length ? ` ${only.join(' ')}` : ''}`;
}

async function replay(loaded: Loaded, args: Args): Promise<number> {
  const full = loaded.drawPlan(args.seed as number, args);
  const plan = narrowed(full, args.ops, args.faults);
  const result = await loaded.runWorld(plan, loaded.time, { verbose: args.verbose, strict: args.strict });
  if (args.history || result.violation) process.stdout.write(`${result.history.join('\n')}\n`);
  process.stdout.write(
    `seed ${plan.seed}: ${plan.topology} ${plan.kind}, ${plan.services.length} services, ${plan.ops.length} calls, ` +
      `${plan.faults.length} faults; ${result.steps} steps, ${result.commands} commands, ` +
      `${result.virtualMs.toFixed(1)} ms virtual: ${result.violation ? `FAILED: ${result.violation}` : 'ok'}\n`,
  );
  return result.violation ? 1 : 0;
}

interface Totals {
  runs: number;
  steps: number;
  commands: number;
  calls: number;
  faults: Record<string, number>;
  outcomes: Record<string, number>;
  shapes: Record<string, number>;
  failures: { seed: number; violation: string }[];
}

function emptyTotals(): Totals {
  return { runs: 0, steps: 0, commands: 0, calls: 0, faults: {}, outcomes: {}, shapes: {}, failures: [] };
}

/** Adds `n` to `counts[key]`. */
function tally(counts: Record<string, number>, key: string, n = 1): void {
  counts[key] = (counts[key] ?? 0) + n;
}

async function explore(loaded: Loaded, args: Args, seeds: number[], deadline: number): Promise<Totals> {
  const totals = emptyTotals();
  for (const seed of seeds) {
    if (realSeconds() > deadline) break;
    const plan = loaded.drawPlan(seed, args);
    const result = await loaded.runWorld(plan, loaded.time, { strict: args.strict });
    totals.runs++;
    totals.steps += result.steps;
    totals.commands += result.commands;
    totals.calls += plan.ops.length;
    tally(totals.shapes, `${plan.topology} ${plan.kind}`);
    for (const f of plan.faults) tally(totals.faults, f.kind);
    for (const [k, n] of Object.entries(result.outcomes)) tally(totals.outcomes, k, n);
    if (result.violation) totals.failures.push({ seed, violation: result.violation });
  }
  return totals;
}

function merge(into: Totals, from: Totals): void {
  into.runs += from.runs;
  into.steps += from.steps;
  into.commands += from.commands;
  into.calls += from.calls;
  for (const key of ['faults', 'outcomes', 'shapes'] as const) {
    for (const [k, n] of Object.entries(from[key])) tally(into[key], k, n);
  }
  into.failures.push(...from.failures);
}

/** Runs the seeds in `workers` processes, each taking every n-th seed. */
function inWorkers(args: Args, seeds: number[]): Promise<Totals[]> {
  return Promise.all(
    Array.from({ length: args.workers }, (_, w) => {
      const mine = seeds.filter((_, i) => i % args.workers === w);
      const child = fork(__filename, ['--worker', ...process.argv.slice(2)], {
        execArgv: process.execArgv,
        stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
      });
      child.send(mine);
      return new Promise<Totals>((resolve, reject) => {
        child.once('message', (totals) => resolve(totals as Totals));
        child.once('exit', (code) => reject(new Error(`worker ${w} exited with ${code}`)));
      });
    }),
  );
}

async function main(): Promise<number> {
  const args = parse(process.argv.slice(2));
  const started = realSeconds();
  const deadline = started + args.timeLimit;
  if (args.worker) {
    const loaded = await load();
    const seeds = await new Promise<number[]>((resolve) =>
      process.once('message', (m) => resolve(m as number[])),
    );
    const totals = await explore(loaded, args, seeds, deadline);
    (process.send as (m: unknown) => void)(totals);
    process.disconnect?.();
    return 0;
  }
  if (args.seed !== undefined) return replay(await load(), args);
  const seeds = args.seeds ?? Array.from({ length: args.runs }, (_, i) => args.from + i);
  const totals = emptyTotals();
  if (args.workers > 1) for (const part of await inWorkers(args, seeds)) merge(totals, part);
  else merge(totals, await explore(await load(), args, seeds, deadline));
  const seconds = realSeconds() - started;
  const list = (r: Record<string, number>) =>
    Object.entries(r)
      .sort()
      .map(([k, n]) => `${k} ${n}`)
      .join(', ');
  process.stdout.write(
    `${totals.runs} runs in ${seconds.toFixed(1)} s (${(totals.runs / seconds).toFixed(0)} runs/s): ` +
      `${totals.steps} steps, ${totals.commands} commands, ${totals.calls} calls\n` +
      `  shapes: ${list(totals.shapes)}\n  faults: ${list(totals.faults)}\n  outcomes: ${list(totals.outcomes)}\n`,
  );
  if (totals.runs < seeds.length)
    process.stdout.write(`  stopped at the time limit: ${seeds.length - totals.runs} seeds not run\n`);
  if (totals.failures.length === 0) {
    process.stdout.write('no invariant broken\n');
    return 0;
  }
  process.stdout.write(`${totals.failures.length} runs FAILED:\n`);
  for (const f of totals.failures.slice(0, 10)) process.stdout.write(`  seed ${f.seed}: ${f.violation}\n`);
  const loaded = await load();
  const first = totals.failures[0];
  const full = loaded.drawPlan(first.seed, args);
  const small = await loaded.shrink(full, (plan) =>
    loaded.runWorld(plan, loaded.time, { strict: args.strict }),
  );
  const result = await loaded.runWorld(small, loaded.time, { strict: args.strict });
  process.stdout.write(
    `\nseed ${first.seed}, shortened to ${small.ops.length} of ${full.ops.length} calls and ${small.faults.length} of ` +
      `${full.faults.length} faults (${result.violation}):\n${result.history.join('\n')}\n\n` +
      `replay: ${replayCommand(full, args, full)}\nreplay shortened: ${replayCommand(small, args, full)}\n`,
  );
  return 1;
}

main().then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    process.stderr.write(`${error instanceof Error ? error.stack : String(error)}\n`);
    process.exitCode = 2;
  },
);
