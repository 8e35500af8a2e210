#!/usr/bin/env node
// The timing-sensitive suites on a busy machine, as users' CI runners are (a few shared cores, other jobs
// beside): one busy-loop process per core runs for the whole of the jest run, so the tests, their workers
// and redis-server all compete for CPU. A test that passes only on an idle machine fails here.
//
// Usage: npm run test:busy [-- [--whole] <jest arguments>]
//   BUSY_PROCESSES=n  the load, in busy-loop processes (default: one per core)
//   --whole           every suite, as `npm test` runs them, instead of the timing-sensitive ones below
import { spawn } from 'node:child_process';
import { availableParallelism, loadavg } from 'node:os';
// The suites whose bounds are about time: the engine, the stores' conformance, several keys, short leases, quorum.
import { BUSY_SUITES as SUITES } from '../jest.config.mjs';

const count = Number(process.env.BUSY_PROCESSES ?? availableParallelism());
const busy = Array.from({ length: count }, () =>
  spawn(process.execPath, ['-e', 'for (;;) {}'], { stdio: 'ignore' }),
);
const stopBusy = () => {
  for (const child of busy) child.kill('SIGKILL');
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
jest.on('exit', (code, signal) => {
  console.log(
    `test:busy: jest ${signal ? `killed by ${signal}` : `exited ${code}`}; load ${loadavg()[0].toFixed(1)}`,
  );
  stopBusy();
  process.exit(code ?? 1);
});
