#!/usr/bin/env node
// The timing-sensitive suites on a busy machine, as users' CI runners are (a few shared cores, other jobs
// beside): one busy-loop process per core runs for the whole of the jest run, so the tests, their workers
// and redis-server all compete for CPU. A test that passes only on an idle machine fails here.
//
// Usage: npm run test:busy [-- [--whole] <jest arguments>]
//   BUSY_PROCESSES=n  the load, in busy-loop processes (default: one per core)
//   BUSY_WORK=command a command that takes one busy loop's place while it runs (CI's simulation smoke: a
//                     process as busy as a loop, doing work of its own); a loop takes the place back
//                     once it ends; its output is printed after jest's, and its failure fails the run
//   --whole           every suite, as `npm test` runs them, instead of the timing-sensitive ones below
import { spawn } from 'node:child_process';
import { availableParallelism, loadavg } from 'node:os';
// The suites whose bounds are about time: the engine, the stores' conformance, several keys, short leases, quorum.
import { BUSY_SUITES as SUITES } from '../jest.config.mjs';

const count = Number(process.env.BUSY_PROCESSES ?? availableParallelism());
const loop = () => spawn(process.execPath, ['-e', 'for (;;) {}'], { stdio: 'ignore' });
const work = process.env.BUSY_WORK;
const busy = Array.from({ length: work ? count - 1 : count }, loop);
/** The work's outcome once it ended: its exit code and output. */
let worked;
const workDone = new Promise((resolve) => {
  if (!work) return resolve(undefined);
  const child = spawn(work, { shell: true, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  busy.push(child);
  const output = [];
  child.stdout.on('data', (chunk) => output.push(chunk));
  child.stderr.on('data', (chunk) => output.push(chunk));
  child.on('exit', (code, signal) => {
    worked = { code: signal ? 1 : code, output: Buffer.concat(output).toString() };
    busy.push(loop());
    resolve(worked);
  });
});
const stopBusy = () => {
  for (const child of busy) {
    // The work runs in a shell of its own process group: end it with its children.
    if (child.spawnargs.includes('-e')) child.kill('SIGKILL');
    else if (worked === undefined) {
      try {
        process.kill(-child.pid, 'SIGKILL');
      } catch {}
    }
  }
};
process.on('exit', stopBusy);
for (const signal of ['SIGINT', 'SIGTERM']) {
  process.on(signal, () => {
    stopBusy();
    process.exit(130);
  });
}

const whole = process.argv.includes('--whole');
const args = process.argv.slice(2).filter((arg) => arg !== '--whole');
const suites = whole || args.some((arg) => !arg.startsWith('-')) ? [] : SUITES;
// Two jest workers here, not jest.config.mjs's three: beside the busy loops, three took the run from
// 201-219 s to 144-166 s but put the machine at load 7, where the quorum store's 100 ms node timeout
// refused grants (0 of 5 nodes answered) and timer bounds drifted; two keep it at the load users' CI
// runners see. `--maxWorkers=N` among the arguments overrides it.
const workers = args.some((arg) => arg.startsWith('--maxWorkers')) ? [] : ['--maxWorkers=2'];
console.log(
  `test:busy: ${count} busy-loop processes on ${availableParallelism()} cores; load ${loadavg()[0].toFixed(1)}`,
);
const jest = spawn(
  process.execPath,
  ['node_modules/jest/bin/jest.js', ...suites, ...workers, ...args],
  // As `npm test` runs jest (its workers, and the suites' own child processes, inherit it).
  { stdio: 'inherit', env: { ...process.env, NODE_OPTIONS: '--experimental-vm-modules' } },
);
jest.on('exit', async (code, signal) => {
  console.log(
    `test:busy: jest ${signal ? `killed by ${signal}` : `exited ${code}`}; load ${loadavg()[0].toFixed(1)}`,
  );
  // The work goes on to its end if jest finished first (it is not timed here).
  const done = work && code === 0 ? await workDone : worked;
  stopBusy();
  if (done) {
    console.log(`test:busy: ${work} exited ${done.code}:\n${done.output}`);
    if (code === 0 && done.code !== 0) process.exit(done.code ?? 1);
  } else if (work) console.log(`test:busy: ${work} stopped with jest`);
  process.exit(code ?? 1);
});
