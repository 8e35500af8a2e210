/**
 * A benchmark worker process, forked by bench/run.ts (`--import tsx`; `--expose-gc` for scenario 5).
 *
 * Load runs ('init', then 'go'): one ioredis client and one library instance for the whole process, as
 * one instance of an application would have, shared by `workers` concurrent loops of
 * acquire → critical section (GET counter, sleep, SET counter + 1) → release, until the stop time; in
 * scenario 6, acquire of two accounts at once → transfer between their balances → release (transfer.ts).
 *
 * Many-waiters runs ('many', then 'release') are bench/many-run.ts; what every run shares (reports,
 * uncaught errors, connections) is bench/worker-process.ts.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import Redis from 'ioredis';
import { createAdapter, type Held, type LockAdapter } from './adapters';
import { hr, sleepUntil } from './clock';
import { CommandCounts } from './instrument';
import {
  counterKey,
  type LoadResult,
  type LoadSpec,
  type LoadWindow,
  lockKey,
  type ProbeResult,
  type ProbeSpec,
  type ToWorker,
  WORKER_CONNECTION,
} from './ipc';
import { releaseMany, runMany } from './many-run';
import { poissonArrivals, seededRandom } from './open-loop';
import { accountKey, pairCode, pickPair, transfer } from './transfer';
import { bump, connect, cpuNow, diff, kindOf, send, uncaught } from './worker-process';

/**
 * A release error's kind, with why the lease said it was lost where it did (this library's lease aborts
 * its `signal` with a LockLostError naming the reason): a release that finds the lock gone after the
 * lease reported it lost is a lapse the holder was told of; one without is a grant nobody announced.
 */
function withLoss(kind: string, held: Held): string {
  const lost: unknown = (held as { signal?: AbortSignal }).signal?.reason;
  const reason = lost instanceof Error ? (lost as { reason?: unknown }).reason : undefined;
  return typeof reason === 'string' ? `${kind} (lease lost: ${reason})` : kind;
}

/**
 * The critical section of scenarios 2-4 and 7-9: read key `key`'s counter, work `csMs`, write it back
 * plus one. An increment lost here is two holders at once.
 */
async function increment(client: Redis, key: number, csMs: number): Promise<void> {
  const value = await client.get(counterKey(key));
  await sleep(csMs);
  await client.set(counterKey(key), String(Number(value ?? 0) + 1));
}

/** Growable column of numbers, shipped as one Float64Array. */
class Column {
  private data = new Float64Array(4096);
  length = 0;
  push(...values: number[]): void {
    if (this.length + values.length > this.data.length) {
      const bigger = new Float64Array(this.data.length * 2);
      bigger.set(this.data);
      this.data = bigger;
    }
    for (const v of values) this.data[this.length++] = v;
  }
  toArray(): Float64Array {
    return this.data.slice(0, this.length);
  }
}

/** Failures that are the library giving up on waiting, as each names it. */
const TIMEOUT_KINDS = new Set(['LockTimeoutError', 'TimeoutError', 'ExecutionError']);

/** Open loop: how long after the stop time still-open calls are given to settle before the report. */
const OPEN_DRAIN_MS = 3_000;
/**
 * Closed loop: how long after the stop time the workers' last calls are given to end. A library whose
 * acquire never returns (redlock retrying forever while deadlocked over several masters) is reported
 * with those calls left open, well within the harness' wait for the report.
 */
const CLOSED_DRAIN_MS = 30_000;

class LoadRun {
  private readonly records = new Column();
  private readonly failures = new Column();
  private readonly requests = new Column();
  /** Open loop: requests not settled yet, by arrival time. */
  private readonly open = new Map<number, number>();
  /** Critical sections under way (and their release). */
  private readonly inside = new Set<Promise<void>>();
  /** The report is being made; no critical section may start. */
  private closing = false;
  private readonly failureKinds: Record<string, number> = {};
  private readonly releaseErrors: Record<string, number> = {};
  /** Arrival time of this library's grant pushes, by waiter token. */
  private readonly pushes = new Map<string, number>();

  private constructor(
    private readonly spec: LoadSpec,
    private readonly client: Redis,
    private readonly others: Redis[],
    private readonly counts: CommandCounts,
    private readonly adapter: LockAdapter,
  ) {}

  static async create(spec: LoadSpec): Promise<LoadRun> {
    const counts = new CommandCounts();
    let run: LoadRun | undefined;
    const client = await connect(spec.port, WORKER_CONNECTION, counts, (_channel, message) => {
      // This library's grant: "g <token> <fence> <server µs>". Not kept for transfers: a pair's second
      // key is granted under a token of its own that no loop would take back out of the map.
      if (message.startsWith('g ') && !spec.transfer) run?.pushes.set(message.split(' ')[1], hr());
    });
    // The other masters of a quorum: their commands count too (summed over the nodes).
    const others = await Promise.all(
      (spec.quorum ?? []).slice(1).map((port) => connect(port, WORKER_CONNECTION, counts)),
    );
    const clients = [client, ...others];
    run = new LoadRun(spec, client, others, counts, createAdapter(spec.lib, clients, counts));
    return run;
  }

  async go(window: LoadWindow): Promise<LoadResult> {
    this.counts.reset();
    uncaught.length = 0;
    const snapshot = () => ({
      ...this.counts.snapshot(),
      dataGets: this.counts.dataGets,
      dataSets: this.counts.dataSets,
      cpuUs: cpuNow(),
    });
    const from = sleepUntil(window.measureFrom).then(snapshot);
    const to = sleepUntil(window.measureTo).then(snapshot);
    await sleepUntil(window.startAt);
    if (this.spec.open) await this.openLoop(window, this.spec.open);
    else {
      const loops = [];
      for (let w = 0; w < this.spec.workers; w++) loops.push(this.loop(w, window.stopAt));
      await this.settle(Promise.all(loops), window.stopAt - hr() + CLOSED_DRAIN_MS);
    }
    const reportedAt = hr();
    // Still open: arrived, neither granted nor failed yet (censored by the harness at reportedAt).
    for (const [arrival, key] of this.open) this.requests.push(key, arrival, Number.NaN, Number.NaN, 0);
    const sent = diff(await to, await from);
    const dataGets = sent.dataGets ?? 0;
    const dataSets = sent.dataSets ?? 0;
    const cpuUs = sent.cpuUs ?? 0;
    delete sent.dataGets;
    delete sent.dataSets;
    delete sent.cpuUs;
    return {
      process: this.spec.process,
      records: this.records.toArray(),
      failures: this.failures.toArray(),
      requests: this.requests.toArray(),
      reportedAt,
      failureKinds: this.failureKinds,
      releaseErrors: this.releaseErrors,
      uncaught: [...uncaught],
      sent,
      sentTotal: this.counts.snapshot(),
      dataGets,
      dataSets,
      connections: this.counts.connections,
      cpuUs,
    };
  }

  /**
   * Requests arrive on their own schedule (a Poisson process, the same for every library given the
   * seed) from the start until the stop time; each is started at its arrival, however many are still
   * waiting, and its times count from the scheduled arrival, not from when the event loop got to it.
   */
  private async openLoop(window: LoadWindow, open: NonNullable<LoadSpec['open']>): Promise<void> {
    const random = seededRandom(open.seed);
    const arrivals = poissonArrivals(open.ratePerS, window.startAt, window.stopAt, random);
    const keys = arrivals.map(() => (this.spec.keys === 1 ? 0 : Math.floor(random() * this.spec.keys)));
    const calls: Promise<void>[] = [];
    for (let i = 0; i < arrivals.length; i++) {
      if (arrivals[i] > hr()) await sleepUntil(arrivals[i]);
      calls.push(this.request(keys[i], arrivals[i], open.timeoutMs));
    }
    // Every call settles within its wait bound; one that does not (a library that ignores it) is left
    // open and reported as such.
    await this.settle(Promise.all(calls), open.timeoutMs + OPEN_DRAIN_MS);
  }

  /**
   * Waits for `calls` at most `ms`, then closes: nothing may touch the counters once the report is made
   * (they are checked against the records), so critical sections under way finish, and a call granted
   * from then on lets go without one.
   */
  private async settle(calls: Promise<unknown>, ms: number): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      calls,
      new Promise((resolve) => {
        timer = setTimeout(resolve, Math.max(0, ms));
      }),
    ]);
    clearTimeout(timer);
    this.closing = true;
    await Promise.all(this.inside);
  }

  private async request(key: number, arrival: number, timeoutMs: number): Promise<void> {
    this.open.set(arrival, key);
    let held: Held;
    try {
      // The request's deadline, from its arrival: a call made late has used part of its time already.
      held = await this.adapter.acquire(lockKey(key), timeoutMs, Date.now() + (arrival + timeoutMs - hr()));
    } catch (error) {
      const failed = hr();
      this.open.delete(arrival);
      const kind = kindOf(error);
      this.failures.push(0, arrival, failed);
      bump(this.failureKinds, kind);
      this.requests.push(key, arrival, Number.NaN, failed, TIMEOUT_KINDS.has(kind) ? 1 : 0);
      return;
    }
    if (this.closing) {
      // Reported as still open: granted after the harness stopped looking.
      await held.release().catch(() => {});
      return;
    }
    const grant = hr();
    this.open.delete(arrival);
    this.requests.push(key, arrival, grant, Number.NaN, 0);
    const inside = this.criticalSection(key).then(() => this.finish(held, 0, key, arrival, grant));
    this.inside.add(inside);
    await inside;
    this.inside.delete(inside);
  }

  private async criticalSection(key: number): Promise<void> {
    if (this.spec.csMs !== null) await increment(this.client, key, this.spec.csMs);
  }

  /** Releases, and records the acquisition (its `call` is the open loop's arrival). */
  private async finish(held: Held, worker: number, key: number, call: number, grant: number): Promise<void> {
    const release = hr();
    try {
      await held.release();
    } catch (error) {
      bump(this.releaseErrors, withLoss(kindOf(error), held));
    }
    const released = hr();
    let push = Number.NaN;
    if (held.token !== undefined) {
      push = this.pushes.get(held.token) ?? Number.NaN;
      this.pushes.delete(held.token);
    }
    this.records.push(worker, key, call, grant, release, released, push);
  }

  private async loop(worker: number, stopAt: number): Promise<void> {
    const { keys, csMs } = this.spec;
    const { client, adapter } = this;
    const pairs = this.spec.transfer;
    while (hr() < stopAt) {
      let key: number;
      let from = 0;
      let to = 0;
      if (pairs) {
        [from, to] = pickPair(keys);
        key = pairCode(from, to, keys);
      } else key = keys === 1 ? 0 : Math.floor(Math.random() * keys);
      const call = hr();
      let held: Held;
      try {
        held = await (pairs
          ? adapter.acquireAll([accountKey(from), accountKey(to)])
          : adapter.acquire(lockKey(key)));
      } catch (error) {
        this.failures.push(worker, call, hr());
        bump(this.failureKinds, kindOf(error));
        continue;
      }
      if (this.closing) {
        // Granted after the report was made (see settle): let go without a critical section.
        await held.release().catch(() => {});
        return;
      }
      const grant = hr();
      const inside = (
        pairs && csMs !== null ? transfer(client, from, to, csMs) : this.criticalSection(key)
      ).then(() => this.finish(held, worker, key, call, grant));
      this.inside.add(inside);
      await inside;
      this.inside.delete(inside);
    }
  }

  async close(): Promise<void> {
    await this.adapter.close().catch(() => {});
    this.client.disconnect();
    for (const other of this.others) other.disconnect();
  }
}

// ---------------------------------------------------------------------------------------------------
// The hand-off floor probe (no lock library involved).

const PROBE_CHANNEL = 'bench:probe';
let probeListener: { client: Redis; arrivals: number[] } | undefined;

async function probeListen(port: number): Promise<void> {
  const client = await connect(port, WORKER_CONNECTION);
  const listener = { client, arrivals: [] as number[] };
  client.on('message', () => listener.arrivals.push(hr()));
  await client.subscribe(PROBE_CHANNEL);
  probeListener = listener;
}

async function probeSend(spec: ProbeSpec): Promise<ProbeResult> {
  const client = await connect(spec.port, WORKER_CONNECTION);
  client.defineCommand('probePublish', {
    numberOfKeys: 0,
    lua: `redis.call('PUBLISH', '${PROBE_CHANNEL}', 'x') return 1`,
  });
  const publish = (client as unknown as { probePublish(): Promise<number> }).probePublish;
  await publish.call(client); // loads the script
  const sent = new Float64Array(spec.count);
  const replyMs = new Float64Array(spec.count);
  for (let i = 0; i < spec.count; i++) {
    await sleep(spec.gapMs);
    sent[i] = hr();
    await publish.call(client);
    replyMs[i] = hr() - sent[i];
  }
  client.disconnect();
  return { sent, replyMs };
}

// ---------------------------------------------------------------------------------------------------
// Serial capacity: the critical section alone, back to back on one key, no lock.

async function capacity(port: number, csMs: number, ms: number): Promise<number> {
  const client = await connect(port, WORKER_CONNECTION);
  try {
    const started = hr();
    let n = 0;
    while (hr() - started < ms) {
      await increment(client, 0, csMs);
      n++;
    }
    return (n * 1000) / (hr() - started);
  } finally {
    client.disconnect();
  }
}

let current: LoadRun | undefined;

async function handle(message: ToWorker): Promise<void> {
  switch (message.type) {
    case 'init':
      await current?.close();
      current = await LoadRun.create(message.spec);
      send({ type: 'ready' });
      return;
    case 'go': {
      const run = current;
      if (!run) throw new Error('go before init');
      current = undefined;
      const result = await run.go(message);
      // A library with calls still open may take its time to close: the report does not wait long.
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([run.close(), new Promise((resolve) => (timer = setTimeout(resolve, 5_000)))]);
      clearTimeout(timer);
      send({ type: 'result', result });
      return;
    }
    case 'many':
      await runMany(message.spec);
      return;
    case 'release':
      releaseMany();
      return;
    case 'probe-listen':
      await probeListen(message.port);
      send({ type: 'ready' });
      return;
    case 'probe-send':
      send({ type: 'probe-sent', result: await probeSend(message.spec) });
      return;
    case 'capacity':
      send({ type: 'capacity', perS: await capacity(message.port, message.csMs, message.ms) });
      return;
    case 'probe-collect': {
      const listener = probeListener;
      probeListener = undefined;
      listener?.client.disconnect();
      send({ type: 'probe-arrivals', arrivals: Float64Array.from(listener?.arrivals ?? []) });
      return;
    }
  }
}

process.on('message', (message: ToWorker) => {
  handle(message).catch((error: unknown) => {
    send({ type: 'error', error: error instanceof Error ? (error.stack ?? error.message) : String(error) });
  });
});
// The harness going away (even killed) closes the channel: do not outlive it.
process.on('disconnect', () => process.exit(0));
