/**
 * Nemesis run: `tsx chaos/run.ts [--quick] [--seed N] [--duration S]`.
 *
 * Starts two throwaway redis-servers (the lock's, behind a fault-injecting TCP proxy, and a "resource"
 * one reached directly, standing for the application's database), N worker processes that take locks
 * and write under them (chaos/worker.ts), and a seeded nemesis (chaos/nemesis.ts). Then it checks:
 *   - fenced writes: the resource accepted fences in strictly increasing order per lock (read from the
 *     resource server's MONITOR stream, the exact order it executed them) and each accepted fence is the
 *     writer's grant fence; the workers' FencedStore results agree;
 *   - unfenced twin: the plain GET/SET counter DOES lose updates under holder pauses (the checker sees);
 *   - no two holders' client-side validity windows overlap, except across a Redis restart;
 *   - liveness: every call settles in time, hand-offs after the nemesis stop are prompt, probes succeed,
 *     every worker stops and exits by itself, no unhandled rejection or untyped error anywhere;
 *   - key hygiene: every key the lock left in Redis has a TTL.
 * Exits 1 on any violation, printing the seed to reproduce. Writes chaos/results/chaos-*.json.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type Redis from 'ioredis';
import { type RedisServer, startRedis } from '../test/support/redis-server';
import { forkTs, hr, isRunning, lockOf, Prng, parseFlags, sleep, writeResult } from './common';
import {
  type Fault,
  type FaultKind,
  type Holder,
  Nemesis,
  type NemesisHost,
  quickPlan,
  randomKind,
} from './nemesis';
import { ChaosProxy } from './proxy';
import type { WorkerArgs } from './worker';

// ------------------------------------------------------------------------------------------------
// Configuration.
// ------------------------------------------------------------------------------------------------

const flags = parseFlags(process.argv.slice(2));
const QUICK = flags.quick;
const cfg = {
  workers: QUICK ? 3 : 4,
  agents: 2,
  keys: Array.from({ length: QUICK ? 3 : 4 }, (_, i) => `chaos-${i}`),
  ttl: QUICK ? 500 : 600,
  claimWindow: QUICK ? 200 : 250,
  waitTimeout: QUICK ? 3_000 : 4_000,
  commandTimeout: QUICK ? 1_000 : 1_500,
  workMs: [20, 120] as [number, number],
  /** Nemesis phase, ms. Quick: bounded so that the whole run stays under 60 s. */
  nemesisMs: QUICK ? 28_000 : Math.round((flags.duration ?? 600) * 1000),
  calmMs: QUICK ? 3_000 : 10_000,
  gapMs: (QUICK ? [150, 600] : [300, 2_000]) as [number, number],
  /** Scheduling slack for a loaded 2-core machine. */
  slackMs: 1_000,
};
const seed = flags.seed;
const prng = new Prng(seed);
const reproduce = `tsx chaos/run.ts${QUICK ? ' --quick' : ''} --seed ${seed}${
  !QUICK && flags.duration !== undefined ? ` --duration ${flags.duration}` : ''
}`;

// ------------------------------------------------------------------------------------------------
// What the workers report.
// ------------------------------------------------------------------------------------------------

interface EndMsg {
  t0: number;
  tGrant?: number;
  tWorkEnd?: number;
  lostAt?: number;
  lostReason?: string;
  validUntilEnd?: number;
  tEnd: number;
  outcome: string;
  message?: string;
  harnessError?: string;
}

interface OpRec {
  op: string;
  key: string;
  slot: number;
  pid: number;
  t0: number;
  tGrant?: number;
  fence?: number;
  wall?: number;
  validUntilGrant?: number;
  /** The latest validity end any report carried (validity only grows while held). */
  validUntilLast?: number;
  /** The latest moment the holder reported it was still working under the lease. */
  heldAtLeastUntil?: number;
  tRead?: number;
  seqRead?: number;
  workMs?: number;
  fenced?: { written: boolean; newest: number; tSent: number; tDone: number };
  twin?: { seq: number; t: number };
  skipped?: number;
  end?: EndMsg;
  killedAt?: number;
}

interface Msg {
  type: string;
  [field: string]: unknown;
}

interface Slot {
  slot: number;
  generation: number;
  pid: number;
  child: ReturnType<typeof forkTs>;
  paused: boolean;
  killT?: number;
  expectedExit: boolean;
  got: Map<string, Msg>;
  wanted: Map<string, (m: Msg) => void>;
}

const ops = new Map<string, OpRec>();
const open = new Set<OpRec>();
const slots = new Map<number, Slot>();
const pauses: { pid: number; t0: number; t1?: number }[] = [];
/** Redis restarts: monotonic times, and wall-clock ms around the kill (Redis's TIME, hence fences, is wall clock). */
const restarts: { t0: number; t1: number; wall0: number; wall1: number }[] = [];
const violations: { check: string; detail: unknown }[] = [];
const notes: string[] = [];
const unhandled: { slot: number; pid: number; kind: string; message: string }[] = [];
const readers = new Set<(h: Holder) => void>();
const respawns = new Set<Promise<void>>();
const crashes: { slot: number; pid: number; code: number | null; signal: string | null }[] = [];

const violate = (check: string, detail: unknown): void => {
  violations.push({ check, detail });
};

process.on('unhandledRejection', (error) => violate('coordinator unhandled rejection', String(error)));

// ------------------------------------------------------------------------------------------------
// Workers.
// ------------------------------------------------------------------------------------------------

let lockServer: RedisServer;
let resourceServer: RedisServer;
let proxy: ChaosProxy;

function workerArgs(slot: number, generation: number): WorkerArgs {
  return {
    slot,
    lockPort: proxy.port,
    resourcePort: resourceServer.port,
    keys: cfg.keys,
    agents: cfg.agents,
    ttl: cfg.ttl,
    claimWindow: cfg.claimWindow,
    waitTimeout: cfg.waitTimeout,
    commandTimeout: cfg.commandTimeout,
    workMs: cfg.workMs,
    seed: seed * 31 + slot * 1_000 + generation,
  };
}

function spawnSlot(slot: number): Promise<void> {
  const generation = (slots.get(slot)?.generation ?? -1) + 1;
  const child = forkTs(join(__dirname, 'worker.ts'), workerArgs(slot, generation));
  const s: Slot = {
    slot,
    generation,
    pid: child.pid!,
    child,
    paused: false,
    expectedExit: false,
    got: new Map(),
    wanted: new Map(),
  };
  slots.set(slot, s);
  child.on('message', (m: Msg) => onMessage(s, m));
  child.once('exit', (code, signal) => {
    // Messages sent just before death may still be on their way: settle open ops a moment later.
    setTimeout(() => {
      const at = s.killT ?? hr();
      for (const rec of open) {
        if (rec.pid === s.pid) {
          rec.killedAt = at;
          open.delete(rec);
        }
      }
    }, 200);
    if (!s.expectedExit) {
      crashes.push({ slot, pid: s.pid, code, signal });
      violate('worker exited unexpectedly', { slot, pid: s.pid, code, signal });
    }
  });
  return expect(s, 'ready', 30_000).then((m) => {
    if (!m) throw new Error(`worker ${slot} did not start within 30 s`);
  });
}

/** The first message of `type` from `s` (received before or after the call), or undefined on timeout/exit. */
function expect(s: Slot, type: string, timeoutMs: number): Promise<Msg | undefined> {
  const got = s.got.get(type);
  if (got) return Promise.resolve(got);
  return new Promise((resolve) => {
    const timer = setTimeout(() => finish(undefined), timeoutMs);
    const onExit = (): void => {
      setTimeout(() => finish(s.got.get(type)), 250);
    };
    const finish = (m: Msg | undefined): void => {
      clearTimeout(timer);
      s.wanted.delete(type);
      s.child.off('exit', onExit);
      resolve(m);
    };
    s.wanted.set(type, finish);
    s.child.once('exit', onExit);
  });
}

function onMessage(s: Slot, m: Msg): void {
  const rec = typeof m.op === 'string' ? ops.get(m.op) : undefined;
  if (rec && typeof m.validUntil === 'number') {
    rec.validUntilLast = Math.max(rec.validUntilLast ?? -Infinity, m.validUntil);
  }
  if (rec && ['grant', 'read', 'fenced', 'twin', 'skipped'].includes(m.type)) {
    const at = (m.tDone ?? m.t) as number;
    rec.heldAtLeastUntil = Math.max(rec.heldAtLeastUntil ?? -Infinity, at);
  }
  switch (m.type) {
    case 'acq': {
      const r: OpRec = {
        op: m.op as string,
        key: m.key as string,
        slot: s.slot,
        pid: s.pid,
        t0: m.t as number,
      };
      ops.set(r.op, r);
      open.add(r);
      return;
    }
    case 'grant':
      if (!rec) return;
      rec.tGrant = m.t as number;
      rec.fence = m.fence as number;
      rec.wall = m.wall as number;
      rec.validUntilGrant = m.validUntil as number | undefined;
      return;
    case 'read': {
      if (!rec) return;
      rec.tRead = m.t as number;
      rec.seqRead = m.seq as number;
      rec.workMs = m.workMs as number;
      const h: Holder = { slot: s.slot, pid: s.pid, op: rec.op, key: rec.key, workMs: rec.workMs };
      if (!s.paused) for (const reader of [...readers]) reader(h);
      return;
    }
    case 'fenced':
      if (!rec) return;
      rec.fenced = {
        written: m.written as boolean,
        newest: m.newest as number,
        tSent: m.tSent as number,
        tDone: m.tDone as number,
      };
      return;
    case 'twin':
      if (rec) rec.twin = { seq: m.seq as number, t: m.t as number };
      return;
    case 'skipped':
      if (rec) rec.skipped = m.t as number;
      return;
    case 'end':
      if (!rec) return;
      rec.end = m as unknown as EndMsg;
      open.delete(rec);
      return;
    case 'unhandled':
      unhandled.push({ slot: s.slot, pid: s.pid, kind: m.kind as string, message: m.message as string });
      return;
    default:
      s.got.set(m.type, m);
      s.wanted.get(m.type)?.(m);
  }
}

const running = (s: Slot): boolean => !s.paused && !s.expectedExit && isRunning(s.child);

// ------------------------------------------------------------------------------------------------
// The nemesis' view of the world.
// ------------------------------------------------------------------------------------------------

function makeHost(admin: Redis): NemesisHost {
  const view = (r: OpRec): Holder => ({ slot: r.slot, pid: r.pid, op: r.op, key: r.key, workMs: r.workMs });
  const runningPids = (): Set<number> => new Set([...slots.values()].filter(running).map((s) => s.pid));
  return {
    ttl: cfg.ttl,
    claimWindow: cfg.claimWindow,
    proxy,
    admin,
    runningSlots: () => [...slots.values()].filter(running).map((s) => s.slot),
    holders: () => {
      const pids = runningPids();
      return [...open].filter((r) => r.tGrant !== undefined && pids.has(r.pid)).map(view);
    },
    waiters: () => {
      const pids = runningPids();
      return [...open].filter((r) => r.tGrant === undefined && pids.has(r.pid)).map(view);
    },
    nextReader: (accept, timeoutMs) =>
      new Promise((resolve) => {
        const done = (h: Holder | undefined): void => {
          clearTimeout(timer);
          readers.delete(listener);
          resolve(h);
        };
        const listener = (h: Holder): void => {
          if (accept(h)) done(h);
        };
        const timer = setTimeout(() => done(undefined), timeoutMs);
        readers.add(listener);
      }),
    pause(slot) {
      const s = slots.get(slot);
      if (!s || !isRunning(s.child)) return;
      s.child.kill('SIGSTOP');
      s.paused = true;
      pauses.push({ pid: s.pid, t0: hr() });
    },
    resume(slot) {
      const s = slots.get(slot);
      if (!s) return;
      s.child.kill('SIGCONT');
      s.paused = false;
      const p = [...pauses].reverse().find((x) => x.pid === s.pid && x.t1 === undefined);
      if (p) p.t1 = hr();
    },
    async kill(slot, restartAfterMs) {
      const s = slots.get(slot);
      if (!s || !isRunning(s.child)) return;
      s.expectedExit = true;
      s.killT = hr();
      const gone = new Promise((resolve) => s.child.once('exit', resolve));
      s.child.kill('SIGKILL');
      await gone;
      const respawn = sleep(restartAfterMs)
        .then(() => spawnSlot(slot))
        .catch((error: unknown) => violate('worker restart failed', String(error)));
      respawns.add(respawn);
      respawn.finally(() => respawns.delete(respawn));
    },
    async restartRedis() {
      const t0 = hr();
      const wall0 = Date.now();
      await lockServer.kill();
      const wall1 = Date.now();
      await lockServer.restart();
      const t1 = hr();
      restarts.push({ t0, t1, wall0, wall1 });
      return { downMs: t1 - t0 };
    },
  };
}

// ------------------------------------------------------------------------------------------------
// The resource server's MONITOR stream: the exact order in which it ran every write.
// ------------------------------------------------------------------------------------------------

const fencedAccepts: { key: string; op: string; fence: number }[] = [];
const twinSets: { key: string; seq: number; op: string }[] = [];
let sentinelSeen: () => void = () => {};

function onMonitor(_time: string, args: string[], source: string): void {
  const cmd = args[0]?.toUpperCase();
  if (source === 'lua' && cmd === 'HSET' && args[1]?.startsWith('chaos:fenced:')) {
    // fenced-write.lua: HSET key v <value> f <fence>; the value is the writer's op id.
    fencedAccepts.push({ key: lockOf(args[1]), op: args[3], fence: Number(args[5]) });
  } else if (source !== 'lua' && cmd === 'SET' && args[1]?.startsWith('chaos:twin:')) {
    const [seq, op] = args[2].split('|');
    twinSets.push({ key: lockOf(args[1]), seq: Number(seq), op });
  } else if (cmd === 'ECHO' && args[1] === 'chaos-end') {
    sentinelSeen();
  }
}

// ------------------------------------------------------------------------------------------------
// Main.
// ------------------------------------------------------------------------------------------------

/** Whole-run budget: quick mode must stay under 60 s; past it, something hangs. */
const BUDGET_MS = QUICK ? 60_000 : cfg.nemesisMs + 120_000;

async function main(): Promise<number> {
  const started = hr();
  setTimeout(() => {
    console.log(
      `\nFAIL: the run exceeded its ${BUDGET_MS / 1000} s budget (a hang?); reproduce with: ${reproduce}`,
    );
    for (const v of violations.slice(0, 20))
      console.log(`  - ${v.check}: ${JSON.stringify(v.detail).slice(0, 600)}`);
    const stuck = [...open].map((r) => ({ op: r.op, key: r.key, ageMs: Math.round(hr() - r.t0) }));
    console.log(`  calls still open: ${JSON.stringify(stuck).slice(0, 1000)}`);
    process.exit(1);
  }, BUDGET_MS).unref();
  console.log(
    `chaos: ${QUICK ? 'quick' : 'full'} run, seed ${seed}, ${cfg.workers} workers x ${cfg.agents} agents on ` +
      `${cfg.keys.length} locks, ttl ${cfg.ttl} ms, claim window ${cfg.claimWindow} ms, nemesis ${Math.round(cfg.nemesisMs / 1000)} s`,
  );
  [lockServer, resourceServer] = await Promise.all([startRedis(), startRedis()]);
  proxy = new ChaosProxy(lockServer.port);
  await proxy.listen();
  const admin = lockServer.client({ connectionName: 'chaos-admin' });
  const resourceAdmin = resourceServer.client();
  const monitor = await resourceServer.client().monitor();
  monitor.on('error', () => {});
  monitor.on('monitor', onMonitor);

  await Promise.all(Array.from({ length: cfg.workers }, (_, slot) => spawnSlot(slot)));
  const tReady = hr();
  await sleep(1_000);

  // --- nemesis ---------------------------------------------------------------------------------
  const nemesis = new Nemesis(makeHost(admin), prng);
  const tNemesis = hr();
  // Quick mode ends its nemesis 38 s after the start at the latest, whatever the start-up took.
  const deadline = Math.min(tNemesis + cfg.nemesisMs, QUICK ? started + 38_000 : Infinity);
  const plan: FaultKind[] = QUICK ? quickPlan(prng) : [];
  let effectivePauseSeen = false;
  while (hr() < deadline) {
    let kind = plan.shift();
    if (!kind && QUICK && !effectivePauseSeen) kind = 'gc-pause';
    kind ??= randomKind(prng);
    const fault = await nemesis.inject(kind);
    logFault(fault, tNemesis);
    await sleep(prng.int(cfg.gapMs[0], cfg.gapMs[1]));
    if (!effectivePauseSeen) effectivePauseSeen = nemesis.faults.some((f) => effectiveness(f).effective);
  }
  const tNemesisEnd = hr();

  // --- heal and calm ---------------------------------------------------------------------------
  proxy.heal();
  const host = makeHost(admin);
  for (const s of slots.values()) if (s.paused) host.resume(s.slot);
  while (respawns.size > 0) await Promise.all([...respawns]);
  for (const s of slots.values()) {
    if (!isRunning(s.child))
      await spawnSlot(s.slot).catch((e) => violate('worker restart failed', String(e)));
  }
  await admin.ping();
  const tCalm = hr();
  await sleep(cfg.calmMs);

  // --- drain: every agent finishes its current call; none may hang ------------------------------
  const drainBound = cfg.waitTimeout + cfg.commandTimeout + cfg.workMs[1] + 2 * cfg.slackMs;
  const tDrain = hr();
  for (const s of slots.values()) s.child.send({ type: 'drain' });
  const drained = await Promise.all([...slots.values()].map((s) => expect(s, 'drained', drainBound)));
  const drainMs = hr() - tDrain;
  drained.forEach((m, i) => {
    if (!m) {
      const s = [...slots.values()][i];
      const stuck = [...open]
        .filter((r) => r.pid === s.pid)
        .map((r) => ({ op: r.op, key: r.key, ageMs: hr() - r.t0 }));
      violate('liveness: worker did not drain in time (hung call)', {
        slot: s.slot,
        boundMs: drainBound,
        stuck,
      });
    }
  });

  // --- probe: after the storm, every worker gets every lock within ttl + claim window + slack ---
  const probeWait = cfg.ttl + cfg.claimWindow + cfg.slackMs;
  for (const s of slots.values()) s.child.send({ type: 'probe', keys: cfg.keys, waitTimeout: probeWait });
  const probeBound = cfg.keys.length * (probeWait + cfg.commandTimeout) + 2_000;
  const probes = await Promise.all([...slots.values()].map((s) => expect(s, 'probed', probeBound)));
  let probeMax = 0;
  probes.forEach((m, i) => {
    const s = [...slots.values()][i];
    if (!m) {
      violate('liveness: probe did not finish', { slot: s.slot });
      return;
    }
    for (const r of m.results as { key: string; ok: boolean; ms: number; code?: string }[]) {
      probeMax = Math.max(probeMax, r.ms);
      if (!r.ok) violate('liveness: probe not granted', { slot: s.slot, ...r, waitTimeout: probeWait });
    }
  });

  // --- close: every worker stops its service and exits by itself --------------------------------
  const closing = [...slots.values()].map(async (s) => {
    s.expectedExit = true;
    s.child.send({ type: 'close' });
    const closed = await expect(s, 'closed', 10_000);
    const exited = await Promise.race([
      new Promise<boolean>((resolve) =>
        isRunning(s.child) ? s.child.once('exit', () => resolve(true)) : resolve(true),
      ),
      sleep(5_000).then(() => false),
    ]);
    if (!closed) violate('hang: worker did not close its LockService', { slot: s.slot });
    if (!exited) {
      violate('hang: worker did not exit after close (something keeps its event loop alive)', {
        slot: s.slot,
        resources: closed?.resources,
      });
      s.child.kill('SIGKILL');
    }
    return { slot: s.slot, closed };
  });
  const closedAll = await Promise.all(closing);
  await sleep(300);

  // --- let MONITOR catch up, then read what Redis holds ----------------------------------------
  const sentinel = new Promise<void>((resolve) => {
    sentinelSeen = resolve;
  });
  await resourceAdmin.echo('chaos-end');
  await Promise.race([sentinel, sleep(5_000)]);
  const hygiene = await keyHygiene();

  monitor.disconnect();
  await proxy.close();
  await lockServer.dispose();
  await resourceServer.dispose();

  const result = analyse({
    nemesis,
    started,
    tReady,
    tNemesis,
    tNemesisEnd,
    tCalm,
    drainMs,
    probeMax,
    hygiene,
    closedAll,
  });
  const file = writeResult(QUICK ? 'chaos-quick' : 'chaos', result);
  // Every call, one per line, for digging into a failure (the JSON keeps only a sample in full mode).
  writeFileSync(
    file.replace(/\.json$/, '.calls.jsonl'),
    [...ops.values()].map((r) => JSON.stringify(r)).join('\n'),
  );
  printSummary(result as unknown as Summary, file);
  return violations.length === 0 ? 0 : 1;
}

function logFault(f: Fault, t0: number): void {
  const at = ((f.t0 - t0) / 1000).toFixed(1).padStart(6);
  const detail = f.skipped ? `skipped: ${f.skipped}` : JSON.stringify(f.detail);
  console.log(`  ${at}s  ${f.kind.padEnd(19)} ${detail}`);
}

async function keyHygiene(): Promise<Record<string, unknown>> {
  const lockKeys = await lockServer.keys();
  const noTtl: string[] = [];
  for (const key of lockKeys) if ((await lockServer.ttlOf(key)) === -1) noTtl.push(key);
  if (noTtl.length > 0) violate('key hygiene: lock keys without a TTL', noTtl);
  const resourceKeys = await resourceServer.keys();
  const persistentOnPurpose = resourceKeys.filter(
    (k) => k.startsWith('chaos:twin:') || k.startsWith('chaos:fenced:'),
  );
  const others = resourceKeys.filter((k) => !persistentOnPurpose.includes(k));
  const otherNoTtl: string[] = [];
  for (const key of others) if ((await resourceServer.ttlOf(key)) === -1) otherNoTtl.push(key);
  if (otherNoTtl.length > 0) violate('key hygiene: resource keys without a TTL', otherNoTtl);
  return {
    lockKeys: lockKeys.length,
    lockKeysWithoutTtl: noTtl,
    lockKeyKinds: {
      owner: lockKeys.filter((k) => /^lock:\{[^}]*\}$/.test(k)).length,
      queue: lockKeys.filter((k) => k.endsWith(':q')).length,
      fence: lockKeys.filter((k) => k.endsWith(':fence')).length,
    },
    resourceKeysPersistentOnPurpose: persistentOnPurpose.length,
    resourceKeysWithoutTtl: otherNoTtl,
  };
}

// ------------------------------------------------------------------------------------------------
// Analysis.
// ------------------------------------------------------------------------------------------------

/** Whether a gc-pause landed inside its victim's work while another process took the lock over. */
function effectiveness(f: Fault): {
  effective: boolean;
  victimFenced?: string;
  victim?: Record<string, unknown>;
} {
  if (f.kind !== 'gc-pause' || f.skipped) return { effective: false };
  const victim = ops.get(f.detail.op as string);
  const rel = (t: number | undefined): number | undefined =>
    t === undefined ? undefined : Math.round(t - f.t0);
  const trace = victim && {
    grant: rel(victim.tGrant),
    read: rel(victim.tRead),
    workMs: victim.workMs,
    skipped: rel(victim.skipped),
    fencedSent: rel(victim.fenced?.tSent),
    twin: rel(victim.twin?.t),
    lostAt: rel(victim.end?.lostAt),
    lostReason: victim.end?.lostReason,
    validUntil: rel(victim.end?.validUntilEnd),
    outcome: victim.end?.outcome,
  };
  if (!victim?.tRead || victim.tRead > f.t0 || !victim.twin || victim.twin.t < f.t0)
    return { effective: false, victim: trace };
  const twinT = victim.twin.t;
  const overtaken = [...ops.values()].some(
    (o) =>
      o.key === victim.key &&
      o.slot !== victim.slot &&
      o.tRead !== undefined &&
      o.tRead > f.t0 &&
      o.tRead < twinT,
  );
  const victimFenced = victim.fenced
    ? victim.fenced.written
      ? 'accepted (newer holder had not written yet)'
      : 'refused (stale)'
    : 'none';
  return { effective: overtaken, victimFenced, victim: trace };
}

/** End of the holder's client-side window: what it believed, cut at the lease's own validity. */
function windowOf(
  r: OpRec,
  runEnd: number,
): { start: number; belief: number; validity: number; validityLow: number; known: boolean } {
  const start = r.tGrant!;
  if (r.end) {
    const belief = Math.min(r.end.lostAt ?? Infinity, r.end.tWorkEnd ?? r.end.tEnd);
    const validUntil = r.end.validUntilEnd;
    const validity = validUntil === undefined ? belief : Math.min(belief, validUntil);
    return { start, belief, validity, validityLow: validity, known: validUntil !== undefined };
  }
  if (r.killedAt !== undefined) {
    // Killed before its end report: it may have released any time after its last report, and its
    // validity may have been renewed after it. So the window surely lasted until its last report
    // (cut at the validity it had then), and surely ended by the kill.
    const belief = r.killedAt;
    const low = Math.min(r.heldAtLeastUntil ?? start, r.validUntilLast ?? belief, belief);
    return { start, belief, validity: belief, validityLow: low, known: true };
  }
  return { start, belief: runEnd, validity: runEnd, validityLow: runEnd, known: false };
}

function pausedOverlap(pid: number, a: number, b: number, now: number): number {
  let total = 0;
  for (const p of pauses) {
    if (p.pid !== pid) continue;
    const lo = Math.max(a, p.t0);
    const hi = Math.min(b, p.t1 ?? now);
    if (hi > lo) total += hi - lo;
  }
  return total;
}

interface AnalyseInput {
  nemesis: Nemesis;
  started: number;
  tReady: number;
  tNemesis: number;
  tNemesisEnd: number;
  tCalm: number;
  drainMs: number;
  probeMax: number;
  hygiene: Record<string, unknown>;
  closedAll: { slot: number; closed: Msg | undefined }[];
}

function analyse(input: AnalyseInput): Record<string, unknown> {
  const now = hr();
  const all = [...ops.values()];
  const granted = all.filter((r) => r.tGrant !== undefined);
  const byKey = new Map<string, OpRec[]>();
  for (const r of granted) {
    const list = byKey.get(r.key) ?? [];
    list.push(r);
    byKey.set(r.key, list);
  }
  for (const list of byKey.values()) list.sort((a, b) => a.tGrant! - b.tGrant!);

  // Fences handed out per lock must strictly increase in grant order (a grant log check).
  let fenceOrderViolations = 0;
  for (const [key, list] of byKey) {
    for (let i = 1; i < list.length; i++) {
      const a = list[i - 1];
      const b = list[i];
      // Grants whose windows did not overlap are ordered; their fences must be too.
      if (b.tGrant! > windowOf(a, now).belief && b.fence! <= a.fence!) {
        fenceOrderViolations++;
        violate('fencing: a later grant got a fence not above an earlier one', {
          key,
          earlier: a.op,
          fence: a.fence,
          later: b.op,
          laterFence: b.fence,
        });
      }
    }
  }

  // 1. Fenced writes, in the order the resource executed them (MONITOR).
  let fencedViolations = 0;
  const lastAccepted = new Map<string, { op: string; fence: number }>();
  for (const w of fencedAccepts) {
    const last = lastAccepted.get(w.key);
    const grantFence = ops.get(w.op)?.fence;
    if (grantFence !== undefined && grantFence !== w.fence) {
      fencedViolations++;
      violate("fenced: accepted fence differs from the writer's grant", { ...w, grantFence });
    }
    if (last && (w.fence < last.fence || (w.fence === last.fence && w.op !== last.op))) {
      fencedViolations++;
      violate('fenced: stale token accepted', { key: w.key, accepted: w, after: last });
    }
    lastAccepted.set(w.key, w);
  }
  // ...and the workers' FencedStore results agree with that order.
  const acceptedOps = new Set(fencedAccepts.map((w) => w.op));
  let fencedRefused = 0;
  let fencedAcceptedReported = 0;
  for (const r of all) {
    if (!r.fenced) continue;
    if (r.fenced.written) {
      fencedAcceptedReported++;
      if (r.fenced.newest !== r.fence || !acceptedOps.has(r.op)) {
        fencedViolations++;
        violate('fenced: FencedStore result disagrees with the resource', {
          op: r.op,
          fence: r.fence,
          result: r.fenced,
        });
      }
    } else {
      fencedRefused++;
      if (!(r.fenced.newest > r.fence!) || acceptedOps.has(r.op)) {
        fencedViolations++;
        violate('fenced: a refusal without a newer fence', { op: r.op, fence: r.fence, result: r.fenced });
      }
    }
  }

  // 2. Unfenced twin: a SET whose counter is not above the current one overwrote a newer value.
  let unfencedViolations = 0;
  const unfencedExamples: unknown[] = [];
  const current = new Map<string, { seq: number; op: string }>();
  for (const w of twinSets) {
    const cur = current.get(w.key);
    if (cur && w.seq <= cur.seq) {
      unfencedViolations++;
      if (unfencedExamples.length < 5)
        unfencedExamples.push({ key: w.key, staleWriter: w.op, wrote: w.seq, overwrote: cur });
    }
    current.set(w.key, w);
  }
  // Cross-check from the workers' own reports: two writers of one counter value = a lost update.
  let lostUpdatesReported = 0;
  const seen = new Set<string>();
  for (const r of all) {
    if (!r.twin) continue;
    const id = `${r.key}#${r.twin.seq}`;
    if (seen.has(id)) lostUpdatesReported++;
    seen.add(id);
  }

  // 3. Validity windows of successive holders of one lock. A window ends when its holder stopped
  // believing it held the lock (release called, signal aborted, process killed) or when the lease's own
  // validity ended, whichever came first. For a holder killed before its end report, the end is only
  // known to lie between its last report and the kill, so a grant in there is "undetermined".
  const overlaps: unknown[] = [];
  const restartOverlaps: unknown[] = [];
  const undetermined: unknown[] = [];
  let beliefOverruns = 0;
  /** Holders whose validity had ended before their work began: frozen after the grant was taken. */
  const frozenGrants: unknown[] = [];
  let closest: { gapMs: number; pair?: unknown } = { gapMs: Infinity };
  let unknownWindows = 0;
  const timeline = (r: OpRec, origin: number): Record<string, unknown> => {
    const rel = (t: number | undefined): number | undefined =>
      t === undefined ? undefined : Number((t - origin).toFixed(3));
    return {
      op: r.op,
      fence: r.fence,
      t0: rel(r.t0),
      grant: rel(r.tGrant),
      validUntilGrant: rel(r.validUntilGrant),
      validUntilLast: rel(r.validUntilLast),
      validUntilEnd: rel(r.end?.validUntilEnd),
      workEnd: rel(r.end?.tWorkEnd),
      lostAt: rel(r.end?.lostAt),
      lostReason: r.end?.lostReason,
      end: rel(r.end?.tEnd),
      killedAt: rel(r.killedAt),
      heldAtLeastUntil: rel(r.heldAtLeastUntil),
      outcome: r.end?.outcome,
    };
  };
  for (const [key, list] of byKey) {
    let prev: OpRec | undefined;
    let prevEnd = -Infinity;
    let prevLow: OpRec | undefined;
    let prevEndLow = -Infinity;
    let prevBelief = -Infinity;
    for (const r of list) {
      const w = windowOf(r, now);
      if (!w.known) unknownWindows++;
      if (w.validity <= w.start) {
        // An empty window overlaps nothing: the grant was taken, then the process stopped before its
        // work began and resumed past the lease's validity (the limit fencing exists for). It must
        // be explained by a pause of that process; otherwise the library handed out a dead lease.
        const gap = r.tGrant! - w.validity;
        const paused = pausedOverlap(r.pid, w.validity, r.tGrant!, now);
        const entry = {
          key,
          op: r.op,
          fence: r.fence,
          pastValidityMs: Number(gap.toFixed(3)),
          pausedMs: Math.round(paused),
        };
        frozenGrants.push(entry);
        // using() checks validity right before the work starts, so only a pause fits in between
        // (a scheduling delay of the process aside).
        if (gap - paused > cfg.slackMs / 10) {
          violate(
            'a lease whose validity had ended reached its holder without a pause of its process',
            entry,
          );
        }
        if (r.tGrant! < prevBelief) beliefOverruns++;
        prevBelief = Math.max(prevBelief, w.belief);
        continue;
      }
      if (prev) {
        const p = r.tGrant! < prevEndLow ? prevLow! : prev;
        const gap = r.tGrant! - (p === prev ? prevEnd : prevEndLow);
        // A fence is the server clock in µs at the grant: the first grant came from an instance that
        // was killed before the second grant was made (on the same machine, so the same wall clock).
        const acrossRestart = restarts.some(
          (x) => p.fence! / 1000 <= x.wall1 + 1 && r.fence! / 1000 >= x.wall0 - 1,
        );
        const describe = () => ({
          key,
          overlapMs: Number((-gap).toFixed(3)),
          first: timeline(p, p.tGrant!),
          second: timeline(r, p.tGrant!),
        });
        if (!acrossRestart && gap < closest.gapMs) closest = { gapMs: gap, pair: describe() };
        if (r.tGrant! < prevBelief) beliefOverruns++;
        if (r.tGrant! < prevEndLow) {
          if (acrossRestart) restartOverlaps.push(describe());
          else {
            overlaps.push(describe());
            violate('mutual exclusion: two holders with overlapping validity', describe());
          }
        } else if (r.tGrant! < prevEnd) {
          // Only a killed holder's window can end between its low and high bounds.
          if (acrossRestart) restartOverlaps.push(describe());
          else undetermined.push(describe());
        }
      }
      if (w.validity > prevEnd) {
        prevEnd = w.validity;
        prev = r;
      }
      if (w.validityLow > prevEndLow) {
        prevEndLow = w.validityLow;
        prevLow = r;
      }
      prevBelief = Math.max(prevBelief, w.belief);
    }
  }

  // 4. Liveness.
  const callBound = cfg.waitTimeout + cfg.commandTimeout + cfg.slackMs;
  let slowestCall = 0;
  const slowCalls: unknown[] = [];
  for (const r of all) {
    const settled = r.tGrant ?? r.end?.tEnd;
    if (settled === undefined) continue;
    const ms = settled - r.t0 - pausedOverlap(r.pid, r.t0, settled, now);
    slowestCall = Math.max(slowestCall, ms);
    if (ms > callBound) slowCalls.push({ op: r.op, key: r.key, ms: Math.round(ms), outcome: r.end?.outcome });
  }
  if (slowCalls.length > 0)
    violate(
      `liveness: calls that took longer than waitTimeout + commandTimeout + ${cfg.slackMs} ms`,
      slowCalls.slice(0, 10),
    );
  const hung = all.filter((r) => !r.end && r.killedAt === undefined);
  if (hung.length > 0)
    violate(
      'liveness: calls that never settled',
      hung.slice(0, 10).map((r) => r.op),
    );

  // Hand-offs after the nemesis stopped: from the moment the lock was free (the previous holder's
  // window ended, or the waiter arrived, or the calm began) to the grant.
  const handoffBound = cfg.ttl + cfg.claimWindow + cfg.slackMs;
  let calmHandoffMax = 0;
  for (const list of byKey.values()) {
    for (let i = 0; i < list.length; i++) {
      const r = list[i];
      if (r.tGrant! < input.tCalm) continue;
      const prev = list[i - 1];
      const freeAt = Math.max(prev ? windowOf(prev, now).belief : -Infinity, r.t0, input.tCalm);
      const gap = r.tGrant! - freeAt;
      calmHandoffMax = Math.max(calmHandoffMax, gap);
      if (gap > handoffBound)
        violate('liveness: slow hand-off after the nemesis stopped', {
          op: r.op,
          key: r.key,
          gapMs: Math.round(gap),
          boundMs: handoffBound,
        });
    }
  }

  // Errors: all typed; none unhandled.
  const outcomes: Record<string, number> = {};
  const lostReasons: Record<string, number> = {};
  for (const r of all) {
    if (!r.end) continue;
    outcomes[r.end.outcome] = (outcomes[r.end.outcome] ?? 0) + 1;
    if (r.end.lostReason) lostReasons[r.end.lostReason] = (lostReasons[r.end.lostReason] ?? 0) + 1;
    if (r.end.outcome === 'UNTYPED')
      violate('an untyped error reached the caller', { op: r.op, message: r.end.message });
    if (r.end.harnessError)
      violate('harness: resource write failed', { op: r.op, error: r.end.harnessError });
  }
  if (unhandled.length > 0) violate('unhandled rejection / exception in a worker', unhandled.slice(0, 10));
  for (const { slot, closed } of input.closedAll) {
    if (closed && (closed.unhandled as number) > 0)
      violate('unhandled rejections counted at close', { slot });
  }

  // What the library did to holders across each Redis restart.
  const restartOutcomes: Record<string, number> = {};
  for (const x of restarts) {
    for (const r of granted) {
      const end = r.end?.tEnd ?? r.killedAt ?? now;
      // Granted by the instance that was killed, and still running when it died.
      if (r.fence! / 1000 <= x.wall1 && end > x.t0) {
        const label = `${r.end?.outcome ?? 'killed'}${r.end?.lostReason ? `: ${r.end.lostReason}` : ''}`;
        restartOutcomes[label] = (restartOutcomes[label] ?? 0) + 1;
      }
    }
  }

  // Which faults were under way (or just healed, within a ttl) when calls failed, by error code.
  const faults = input.nemesis.faults;
  const errorContext: Record<string, Record<string, number>> = {};
  for (const r of all) {
    if (!r.end || r.end.outcome === 'ok') continue;
    const during = faults.filter((f) => !f.skipped && f.t0 <= r.end!.tEnd && f.t1 + cfg.ttl >= r.t0);
    const label = during.length > 0 ? [...new Set(during.map((f) => f.kind))].join('+') : 'no fault';
    errorContext[r.end.outcome] ??= {};
    errorContext[r.end.outcome][label] = (errorContext[r.end.outcome][label] ?? 0) + 1;
  }

  // Faults: counts, effective pauses, stalls (fault -> next grant on the keys it hit).
  const faultCounts: Record<string, { injected: number; skipped: number }> = {};
  const stalls: Record<string, { fromInjectMaxMs: number; fromHealMaxMs: number }> = {};
  let longestStall = { ms: 0, kind: '', key: '', faultId: 0 };
  const grantTimes = new Map([...byKey].map(([k, list]) => [k, list.map((r) => r.tGrant!)]));
  const nextGrant = (key: string, t: number): number | undefined => grantTimes.get(key)?.find((g) => g >= t);
  let effectivePauses = 0;
  const pauseReport: unknown[] = [];
  for (const f of faults) {
    faultCounts[f.kind] ??= { injected: 0, skipped: 0 };
    const c = faultCounts[f.kind];
    if (f.skipped) {
      c.skipped++;
      continue;
    }
    c.injected++;
    stalls[f.kind] ??= { fromInjectMaxMs: 0, fromHealMaxMs: 0 };
    const s = stalls[f.kind];
    for (const key of f.keys ?? cfg.keys) {
      const g0 = nextGrant(key, f.t0);
      const g1 = nextGrant(key, f.t1);
      if (g0 !== undefined) {
        s.fromInjectMaxMs = Math.max(s.fromInjectMaxMs, Math.round(g0 - f.t0));
        if (g0 - f.t0 > longestStall.ms)
          longestStall = { ms: Math.round(g0 - f.t0), kind: f.kind, key, faultId: f.id };
      }
      if (g1 !== undefined) s.fromHealMaxMs = Math.max(s.fromHealMaxMs, Math.round(g1 - f.t1));
    }
    if (f.kind === 'gc-pause') {
      const e = effectiveness(f);
      if (e.effective) effectivePauses++;
      pauseReport.push({
        id: f.id,
        ...f.detail,
        effective: e.effective,
        victimFencedWrite: e.victimFenced,
        victim: e.victim,
      });
    }
  }
  if (effectivePauses > 0 && unfencedViolations === 0) {
    violate(
      'checker blind: a holder was paused mid-work and overtaken, yet the unfenced twin shows no violation',
      pauseReport,
    );
  }
  if (QUICK && effectivePauses === 0) {
    violate(
      "quick mode: no GC pause landed inside a holder's work, so the checker was not shown to see violations",
      pauseReport,
    );
  }

  const granteds = granted.length;
  return {
    seed,
    mode: QUICK ? 'quick' : 'full',
    reproduce,
    ok: violations.length === 0,
    config: cfg,
    timings: {
      totalS: Number(((now - input.started) / 1000).toFixed(1)),
      startupS: Number(((input.tReady - input.started) / 1000).toFixed(1)),
      nemesisS: Number(((input.tNemesisEnd - input.tNemesis) / 1000).toFixed(1)),
      drainMs: Math.round(input.drainMs),
      probeMaxMs: Math.round(input.probeMax),
    },
    operations: {
      calls: all.length,
      granted: granteds,
      outcomes,
      lostReasons,
      fencedAccepted: fencedAccepts.length,
      fencedAcceptedReported,
      fencedRefusedStale: fencedRefused,
      writesSkippedAfterLoss: all.filter((r) => r.skipped !== undefined).length, // sent anyway (see worker)
      twinWrites: twinSets.length,
      workerRestarts: [...slots.values()].reduce((n, s) => n + s.generation, 0),
    },
    faults: { counts: faultCounts, total: faults.filter((f) => !f.skipped).length, list: faults },
    checks: {
      fencedViolations,
      fenceOrderViolations,
      unfencedViolations,
      unfencedExamples,
      lostUpdatesReported,
      effectivePauses,
      pauses: pauseReport,
      overlaps: overlaps.length,
      overlapsAcrossRestart: restartOverlaps.length,
      undeterminedKilledHolder: undetermined.length,
      undetermined: undetermined.slice(0, 20),
      restartOverlaps: restartOverlaps.slice(0, 20),
      holdersBelievingPastValidity: beliefOverruns,
      frozenGrants: frozenGrants.length,
      frozenGrantExamples: frozenGrants.slice(0, 5),
      closestHandoffMs: Number.isFinite(closest.gapMs) ? Number(closest.gapMs.toFixed(3)) : null,
      closestHandoff: closest.pair,
      unknownWindows,
      slowestCallMs: Math.round(slowestCall),
      callBoundMs: callBound,
      calmHandoffMaxMs: Math.round(calmHandoffMax),
      handoffBoundMs: handoffBound,
      longestStall,
      stalls,
      restartOutcomes,
      errorContext,
      unhandled: unhandled.length,
      crashes,
      hygiene: input.hygiene,
      workerLeftovers: input.closedAll.map(({ slot, closed }) => ({
        slot,
        resources: closed?.resources,
        redisErrors: closed?.redisErrors,
      })),
    },
    notes,
    violations,
    restarts,
    pauses,
    // Every call in quick mode; the failed ones (first 300) in full mode.
    calls: (QUICK ? all : all.filter((r) => r.end?.outcome !== 'ok').slice(0, 300)).map((r) => ({
      ...r,
      end: r.end && { ...r.end, message: undefined },
    })),
    proxy: proxy.stats,
  };
}

interface Summary {
  seed: number;
  reproduce: string;
  ok: boolean;
  timings: Record<string, number>;
  operations: Record<string, unknown>;
  faults: { counts: Record<string, { injected: number; skipped: number }>; total: number };
  checks: Record<string, unknown> & {
    longestStall: { ms: number; kind: string; key: string };
    stalls: Record<string, { fromInjectMaxMs: number; fromHealMaxMs: number }>;
  };
}

function printSummary(r: Summary, file: string): void {
  const o = r.operations;
  const c = r.checks;
  const line = (label: string, value: unknown): void =>
    console.log(`  ${label.padEnd(34)} ${typeof value === 'string' ? value : JSON.stringify(value)}`);
  console.log('\nchaos summary');
  line('time', `${r.timings.totalS} s (nemesis ${r.timings.nemesisS} s, drain ${r.timings.drainMs} ms)`);
  line('calls / granted', `${o.calls} / ${o.granted}`);
  line('outcomes', o.outcomes);
  line('lost reasons', o.lostReasons);
  line('fenced writes accepted / refused', `${o.fencedAccepted} / ${o.fencedRefusedStale}`);
  line('writes after the signal aborted', o.writesSkippedAfterLoss);
  line('twin writes', o.twinWrites);
  line('worker restarts', o.workerRestarts);
  console.log(`  faults (${r.faults.total} injected):`);
  for (const [kind, n] of Object.entries(r.faults.counts)) {
    const s = c.stalls[kind];
    console.log(
      `    ${kind.padEnd(20)} ${String(n.injected).padStart(4)}${n.skipped ? ` (+${n.skipped} skipped)` : ''}` +
        (s ? `   stall max ${s.fromInjectMaxMs} ms from injection, ${s.fromHealMaxMs} ms from heal` : ''),
    );
  }
  line('FENCED violations (must be 0)', c.fencedViolations);
  line(
    'unfenced violations (must be > 0)',
    `${c.unfencedViolations} (lost updates reported by workers: ${c.lostUpdatesReported}; effective pauses: ${c.effectivePauses})`,
  );
  line('overlaps (must be 0)', c.overlaps);
  line('overlaps across Redis restarts', c.overlapsAcrossRestart);
  line('undetermined (holder SIGKILLed)', c.undeterminedKilledHolder);
  line('holders believing past validity', c.holdersBelievingPastValidity);
  line('grants past validity (frozen)', c.frozenGrants);
  line('closest hand-off (validity gap)', `${c.closestHandoffMs} ms`);
  line('restart: what holders got', c.restartOutcomes);
  line('errors by fault under way', c.errorContext);
  line(
    'longest stall after a fault',
    `${c.longestStall.ms} ms (${c.longestStall.kind} on ${c.longestStall.key})`,
  );
  line('slowest call (pauses excluded)', `${c.slowestCallMs} ms (bound ${c.callBoundMs})`);
  line('max hand-off after nemesis stop', `${c.calmHandoffMaxMs} ms (bound ${c.handoffBoundMs})`);
  line('unhandled rejections', c.unhandled);
  line('key hygiene', c.hygiene);
  console.log(`  result: ${file}`);
  if (r.ok) console.log(`\nPASS (seed ${r.seed})`);
  else {
    console.log(`\nFAIL: ${violations.length} violation(s); reproduce with: ${r.reproduce}`);
    for (const v of violations.slice(0, 20))
      console.log(`  - ${v.check}: ${JSON.stringify(v.detail).slice(0, 600)}`);
  }
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    console.error(`chaos run crashed (seed ${seed}; reproduce with: ${reproduce})`, error);
    process.exit(2);
  },
);
