/**
 * One run: the plan's servers and services (LockService, the code that ships, over SimConnections), the
 * callers' calls and the faults, all as events of one scheduler, with the invariants checked after
 * every step. Returns the history (the same bytes for the same plan) and the first violation, if any.
 */
import { attachConnection } from '../lib/clients';
import { LockError } from '../lib/errors/lock.error';
import type { Lease } from '../lib/lease';
import { LockService } from '../lib/lock.service';
import { Invariants, type LeaseRecord } from './invariants';
import { drawProfile, Network } from './network';
import type { FaultPlan, OpPlan, Plan } from './plan';
import { Actor, Rng, Scheduler } from './scheduler';
import { SimConnection, scriptOf } from './sim-connection';
import { SimServer } from './sim-server';
import type { VirtualTime } from './virtual-time';

export interface RunResult {
  history: string[];
  violation?: string;
  steps: number;
  commands: number;
  virtualMs: number;
  outcomes: Record<string, number>;
}

/** The longest ttl a plan's calls use (plan.ts), ms. */
const MAX_TTL_MS = 1_000;

/** A run ends by itself once every caller is done and the services closed; this long is a hang. */
const RUN_LIMIT_US = 120_000_000;

interface Service {
  index: number;
  actor: Actor;
  connections: SimConnection[];
  lock: LockService | undefined;
}

/** Set while a run is under way: where an unhandled rejection is reported. */
let running: Invariants | undefined;
process.on('unhandledRejection', (reason) => {
  const text = reason instanceof Error ? `${reason.name}: ${reason.message}` : String(reason);
  if (running) running.fail(`unhandled rejection: ${text}`);
  else throw reason;
});

/** One command as the history shows it: a script by name, its token, and the reply. */
function describe(args: readonly (string | number)[], outcome: unknown): string {
  const [name, ...rest] = args.map(String);
  const upper = name.toUpperCase();
  const call =
    upper === 'EVALSHA' || upper === 'EVAL'
      ? `${upper === 'EVAL' ? 'EVAL ' : ''}${scriptOf(args) ?? '?'} ${rest.slice(2 + Number(rest[1]), 2 + Number(rest[1]) + 1).join(' ')} ${rest
          .slice(2 + Number(rest[1]) + 1)
          .slice(0, 12)
          .join(' ')}`
      : `${upper} ${rest.join(' ')}`;
  const reply = outcome instanceof Error ? `ERR ${outcome.message}` : JSON.stringify(outcome);
  return `${call.slice(0, 160)} -> ${reply.slice(0, 120)}`;
}

/** How a run reports and judges: `verbose` logs every command; `strict` excuses no eviction (a self-test). */
export interface RunOptions {
  verbose?: boolean;
  strict?: boolean;
}

export async function runWorld(plan: Plan, time: VirtualTime, options: RunOptions = {}): Promise<RunResult> {
  const { verbose = false, strict = false } = options;
  const rng = new Rng(plan.seed ^ 0x5eed);
  const scheduler = new Scheduler();
  time.use(scheduler, rng.fork());
  const history: string[] = [];
  const log = (who: string, text: string) => {
    history.push(`${(scheduler.now / 1000).toFixed(3).padStart(9)} ${who.padEnd(4)} ${text}`);
  };
  const network = new Network(scheduler, rng.fork(), drawProfile(rng));
  const servers = plan.servers.map(
    (clock, i) => new SimServer(`sim-${i}`, new Actor(`r${i}`, clock.rate, clock.offsetMs * 1000), scheduler),
  );
  const reconnect = rng.fork();
  const settings = { onDrop: plan.onDrop, reconnectUs: () => reconnect.int(1_000, 80_000) };
  const services: Service[] = plan.services.map((clock, index) => {
    const actor = new Actor(`s${index}`, clock.rate, clock.offsetMs * 1000);
    const connections = servers.map((server) => new SimConnection(server, actor, network, settings));
    return { index, actor, connections, lock: undefined };
  });
  const invariants = new Invariants(plan, scheduler, servers, log, strict);
  for (const server of servers) {
    server.onCommand = (args, outcome) => {
      invariants.observe(server, args, outcome);
      if (!verbose) return;
      const lines = server.redis
        .snapshot()
        .filter((e) => e.type === 'list')
        .map((e) => `${e.key}=[${(e.value as string[]).join(' ')}]`);
      log(server.actor.name, `${describe(args, outcome)}${lines.length ? `  ${lines.join(' ')}` : ''}`);
    };
  }
  const outcomes: Record<string, number> = {};
  let callersLeft = 0;
  running = invariants;
  scheduler.afterStep = () => invariants.check();

  for (const service of services) {
    scheduler.at(0, service.actor, () => {
      for (const connection of service.connections) attachConnection(connection.client, connection);
      const clients = service.connections.map((c) => c.client);
      const client = (plan.topology === 'quorum' ? clients : clients[0]) as never;
      service.lock = new LockService(client, {
        instanceName: service.actor.name,
        claimWindow: plan.claimWindow,
        commandTimeout: plan.commandTimeout,
        nodeTimeout: Math.min(plan.commandTimeout, 100),
      } as never);
    });
  }

  const callers = new Map<string, OpPlan[]>();
  for (const op of plan.ops) {
    const name = `${op.service}.${op.caller}`;
    callers.set(name, [...(callers.get(name) ?? []), op]);
  }
  const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

  const runOp = async (service: Service, op: OpPlan): Promise<void> => {
    const lock = service.lock as LockService;
    const who = service.actor.name;
    const options = {
      ttl: op.ttl,
      waitTimeout: op.waitTimeout,
      ...(plan.kind === 'semaphore' ? { permits: plan.permits } : {}),
      ...(op.mode ? { mode: op.mode } : {}),
    };
    const call = invariants.callStarted(op, service.actor);
    const deadline = op.deadlineMs === undefined || op.how !== 'wait' ? '' : ` deadline=${op.deadlineMs}`;
    log(
      who,
      `op${op.id} ${op.how} ${op.key}${op.mode ? ` ${op.mode}` : ''} ttl=${op.ttl} wait=${op.waitTimeout}${deadline}`,
    );
    let lease: Lease | null;
    try {
      if (op.how === 'try') lease = await lock.tryAcquire(op.key, { ...options, waitTimeout: 0 });
      else if (op.how === 'abort') {
        const controller = new AbortController();
        const timer = setTimeout(() => controller.abort(), op.abortMs);
        lease = await lock.acquire(op.key, { ...options, signal: controller.signal });
        clearTimeout(timer);
      } else if (op.deadlineMs !== undefined) {
        const called = performance.now();
        lease = await lock.acquire(op.key, { ...options, deadline: Date.now() + op.deadlineMs });
        // A grant read after the wait its deadline left is passed on, never started (the deadline
        // option): a lease served from the line (not by the first call) comes before the deadline.
        const fromLine = (lease as unknown as { grantedFrom?: number }).grantedFrom !== undefined;
        if (fromLine && performance.now() - called >= op.deadlineMs) {
          invariants.fail(`op${op.id} started from the line after its deadline`);
        }
      } else lease = await lock.acquire(op.key, options);
    } catch (error) {
      invariants.callSettled(call);
      const code = error instanceof LockError ? error.code : `UNTYPED ${(error as Error)?.message}`;
      outcomes[code] = (outcomes[code] ?? 0) + 1;
      log(who, `op${op.id} failed ${code}`);
      if (!(error instanceof LockError)) invariants.fail(`op${op.id} failed with an untyped error: ${code}`);
      return;
    }
    invariants.callSettled(call);
    if (!lease) {
      outcomes.busy = (outcomes.busy ?? 0) + 1;
      log(who, `op${op.id} busy`);
      return;
    }
    outcomes.granted = (outcomes.granted ?? 0) + 1;
    const record: LeaseRecord = invariants.obtained(op, service.actor, lease, call);
    log(who, `op${op.id} granted fence=${lease.fence}`);
    await sleep(op.holdMs / 2);
    if (op.extend) {
      try {
        await lease.extend();
        log(who, `op${op.id} extended`);
      } catch (error) {
        log(who, `op${op.id} extend failed ${error instanceof LockError ? error.code : 'UNTYPED'}`);
      }
    }
    await sleep(op.holdMs / 2);
    record.released = true;
    const release = invariants.callStarted(op, service.actor, 'release');
    try {
      await lease.release();
      log(who, `op${op.id} released`);
    } catch (error) {
      const code = error instanceof LockError ? error.code : `UNTYPED ${(error as Error)?.message}`;
      log(who, `op${op.id} release failed ${code}`);
      if (!(error instanceof LockError)) invariants.fail(`op${op.id} release failed untyped: ${code}`);
    }
    invariants.callSettled(release);
  };

  const done = new Set<string>();
  const finish = (caller: string) => {
    if (done.has(caller)) return;
    done.add(caller);
    if (--callersLeft > 0) return;
    for (const s of services) {
      if (s.actor.crashed) continue;
      scheduler.at(scheduler.now, s.actor, () => {
        s.lock?.close().then(
          () => log(s.actor.name, 'closed'),
          (error: unknown) => invariants.fail(`close() rejected: ${String(error)}`),
        );
      });
    }
  };

  for (const [name, ops] of callers) {
    const service = services[ops[0].service];
    callersLeft++;
    scheduler.at(1, service.actor, () => {
      void (async () => {
        for (const op of ops) {
          await sleep(op.delayMs);
          await runOp(service, op);
        }
      })().finally(() => finish(name));
    });
  }

  for (const fault of plan.faults) scheduleFault(fault);

  function scheduleFault(fault: FaultPlan): void {
    const service = services[fault.service];
    const server = servers[fault.server];
    // In the context of whom it strikes: what the service's code does about it (a call failed by a
    // dropped connection) runs on the service's clock, as it would in its process.
    const actor = fault.kind === 'evict' || fault.kind === 'restart' ? server.actor : service.actor;
    scheduler.at(fault.atMs * 1000, actor, () => {
      if (service.actor.crashed && fault.kind !== 'evict' && fault.kind !== 'restart') return;
      switch (fault.kind) {
        case 'drop':
          log('!', `drop s${fault.service} -> ${server.name}`);
          service.connections[fault.server].drop();
          break;
        case 'lose-pushes':
          log('!', `lose pushes of s${fault.service} on ${server.name}`);
          for (const subscriber of service.connections[fault.server].subscribers) subscriber.lose();
          break;
        case 'pause':
          log('!', `pause s${fault.service} for ${fault.durationMs} ms`);
          service.actor.pausedUntil = Math.max(
            service.actor.pausedUntil,
            scheduler.now + fault.durationMs * 1000,
          );
          service.actor.pausedFor += fault.durationMs * 1000;
          break;
        case 'crash':
          log('!', `crash s${fault.service}`);
          service.actor.crashed = true;
          for (const connection of service.connections) connection.crashed();
          invariants.crashed(service.actor);
          finishCrashed(service);
          break;
        case 'restart': {
          // A quorum node restarted empty stays down a ttl at least (the rule docs/guarantees.md gives
          // Redlock); one server restarted empty loses its holders' exclusion, as documented.
          const downUs = (plan.topology === 'quorum' ? MAX_TTL_MS : 0) * 1000 + fault.durationMs * 1000;
          log('!', `restart ${server.name} empty, down ${downUs / 1000} ms`);
          invariants.lostAll(server);
          server.restart(scheduler, downUs);
          // Each service learns of it in its own context, as its process would.
          for (const s of services)
            scheduler.at(scheduler.now, s.actor, () => s.connections[fault.server].dropForRestart());
          break;
        }
        case 'evict': {
          const evicted = invariants.evictOne(server, rng);
          log('!', `evict ${evicted ?? '(nothing)'} on ${server.name}`);
          break;
        }
      }
    });
  }

  function finishCrashed(service: Service): void {
    // Its callers will never finish: count them out.
    for (const [name, ops] of callers) if (ops[0].service === service.index) finish(name);
  }

  try {
    await time.runScheduler(scheduler, RUN_LIMIT_US, () => invariants.violation !== undefined);
    if (!invariants.violation && scheduler.pending > 0) {
      invariants.fail(`the run did not end within ${RUN_LIMIT_US / 1e6} s of virtual time`);
    }
    if (!invariants.violation) invariants.atEnd();
  } finally {
    running = undefined;
  }
  if (invariants.violation) log('!', `VIOLATION ${invariants.violation}`);
  return {
    history,
    violation: invariants.violation,
    steps: scheduler.steps,
    commands: servers.reduce((n, s) => n + s.commands, 0),
    virtualMs: scheduler.now / 1000,
    outcomes,
  };
}
