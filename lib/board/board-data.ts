/**
 * What the lock board shows, read from LockService.list(): every live lock with its holders and its
 * line in order, who each one is (the instance part of its token, this one marked), how long each has
 * held or waited; and this process's recent timeouts and lost leases. Nothing is read while nobody looks:
 * each view is one listing, shared by the viewers that ask while it runs.
 */
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { performance } from 'node:perf_hooks';
import type { LockInfo } from '../lease';
import type { LockService } from '../lock.service';
import { instanceOf } from '../store/token';
import { LOCK_CHANNELS, type LockEvent } from '../telemetry/lock-events';
import type { ResolvedBoardOptions } from './board-options';

export interface BoardHolder {
  token: string;
  instance: string;
  mine: boolean;
  ttl: number;
  fence: number;
  heldMs: number | null;
  mode?: 'read' | 'write';
}

export interface BoardWaiter {
  waiter: string;
  instance: string;
  mine: boolean;
  /** How long it has waited: exact for this instance's waiters, else since this board first saw it. */
  waitingMs: number;
  waitingExact: boolean;
  mode?: 'read' | 'write';
}

export interface BoardLock {
  key: string;
  kind: LockInfo['kind'];
  permits: number;
  mode: 'read' | 'write' | null;
  holder: string | null;
  holderInstance: string | null;
  heldMs: number | null;
  ttl: number;
  fence: number;
  holders: BoardHolder[];
  queue: BoardWaiter[];
  /** Waiters in line: on a quorum, counted but not listed in `queue`. */
  queueLength: number;
  reserved: number;
  nodes?: LockInfo['nodes'];
}

export interface BoardEvent {
  at: number;
  kind: 'timeout' | 'lost';
  name: string;
  keys: readonly string[];
  token?: string;
  reason?: string;
  message?: string;
  waitedMs?: number;
  heldMs?: number;
}

export interface BoardView {
  instance: string;
  serverTime: number;
  readOnly: boolean;
  truncated: boolean;
  limit: number;
  locks: BoardLock[];
  recent: BoardEvent[];
}

/** Recording stops this long after the last request from a viewer (history 'while-viewed'). */
const VIEWER_GONE_MS = 60_000;

export class BoardData {
  /** When this board first saw each waiter of another instance in line: key, then token. */
  private readonly firstSeen = new Map<string, Map<string, number>>();
  private readonly recent: BoardEvent[] = [];
  private recording = false;
  private idleTimer: NodeJS.Timeout | undefined;
  private readonly listings = new Map<string, Promise<BoardView>>();

  constructor(
    private readonly locks: LockService,
    private readonly options: ResolvedBoardOptions,
  ) {
    if (options.history === 'always') this.startRecording();
  }

  /** The live locks (those containing `filter`), for one viewer's request. */
  view(filter: string): Promise<BoardView> {
    this.viewed();
    // Viewers asking while a listing runs share it: many open pages never multiply the scans.
    const running = this.listings.get(filter);
    if (running) return running;
    const view = this.read(filter);
    this.listings.set(filter, view);
    const done = () => this.listings.delete(filter);
    view.then(done, done);
    return view;
  }

  /** One live lock, or undefined when it is free. */
  async lock(key: string): Promise<BoardLock | undefined> {
    this.viewed();
    const info = await this.locks.inspect(key);
    if (!info.held && info.queueLength === 0) return undefined;
    return this.toBoard(info, performance.now());
  }

  /** An operator's forced release (the board with readOnly: false). */
  forceRelease(key: string, token: string): Promise<boolean> {
    this.viewed();
    return this.locks.forceRelease(key, token);
  }

  onModuleDestroy(): void {
    this.stopRecording();
    clearTimeout(this.idleTimer);
  }

  private async read(filter: string): Promise<BoardView> {
    const { locks, truncated } = await this.locks.list({
      limit: this.options.limit,
      ...(filter ? { filter } : {}),
    });
    const now = performance.now();
    const shown = locks.map((info) => this.toBoard(info, now));
    // Waiters gone from every line shown are forgotten (a filtered view keeps the others' records).
    for (const key of this.firstSeen.keys()) {
      if ((!filter || key.includes(filter)) && !locks.some((info) => info.key === key))
        this.firstSeen.delete(key);
    }
    return {
      instance: this.locks.instance,
      serverTime: locks[0]?.serverTime ?? Date.now(),
      readOnly: this.options.readOnly,
      truncated,
      limit: this.options.limit,
      locks: shown,
      recent: [...this.recent].reverse(),
    };
  }

  private toBoard(info: LockInfo, now: number): BoardLock {
    const me = this.locks.instance;
    const holders: BoardHolder[] = info.holders.map((h) => {
      const instance = instanceOf(h.token);
      return {
        token: h.token,
        instance,
        mine: instance === me,
        ttl: h.ttl,
        fence: h.fence,
        heldMs: h.heldMs ?? null,
        ...(h.mode ? { mode: h.mode } : {}),
      };
    });
    const seen = this.firstSeen.get(info.key) ?? new Map<string, number>();
    const stillThere = new Map<string, number>();
    const queue: BoardWaiter[] = (info.waiting ?? []).map((w) => {
      const first = seen.get(w.token) ?? now;
      stillThere.set(w.token, first);
      const exact = w.waitedMs !== undefined;
      const instance = instanceOf(w.token);
      return {
        waiter: w.token,
        instance,
        mine: instance === me,
        waitingMs: exact ? (w.waitedMs as number) : Math.round(now - first),
        waitingExact: exact,
        ...(w.mode ? { mode: w.mode } : {}),
      };
    });
    if (stillThere.size > 0) this.firstSeen.set(info.key, stillThere);
    else this.firstSeen.delete(info.key);
    const first = holders[0];
    return {
      key: info.key,
      kind: info.kind,
      permits: info.permits,
      mode: info.mode ?? null,
      holder: info.holder,
      holderInstance: info.holder === null ? null : instanceOf(info.holder),
      heldMs: first?.heldMs ?? null,
      ttl: info.ttl,
      fence: info.fence,
      holders,
      queue,
      queueLength: info.queueLength,
      reserved: info.reserved,
      ...(info.nodes ? { nodes: info.nodes } : {}),
    };
  }

  /** A viewer asked: record events now, and until a while after the last request. */
  private viewed(): void {
    if (this.options.history === 'always' || this.options.recentEvents === 0) return;
    this.startRecording();
    clearTimeout(this.idleTimer);
    this.idleTimer = setTimeout(() => this.stopRecording(), VIEWER_GONE_MS).unref();
  }

  private readonly onEvent = (message: unknown): void => {
    const event = message as LockEvent;
    if (event.kind !== 'timeout' && event.kind !== 'lost') return;
    const error = event.error instanceof Error ? event.error.message : undefined;
    this.recent.push({
      at: Date.now(),
      kind: event.kind,
      name: event.name,
      keys: event.keys,
      ...(event.token ? { token: event.token } : {}),
      ...(event.reason ? { reason: event.reason } : {}),
      ...(error ? { message: error } : {}),
      ...(event.waitedMs !== undefined ? { waitedMs: Math.round(event.waitedMs) } : {}),
      ...(event.heldMs !== undefined ? { heldMs: Math.round(event.heldMs) } : {}),
    });
    if (this.recent.length > this.options.recentEvents) this.recent.shift();
  };

  private startRecording(): void {
    if (this.recording || this.options.recentEvents === 0) return;
    this.recording = true;
    subscribe(LOCK_CHANNELS.timeout, this.onEvent);
    subscribe(LOCK_CHANNELS.lost, this.onEvent);
  }

  private stopRecording(): void {
    if (!this.recording) return;
    this.recording = false;
    unsubscribe(LOCK_CHANNELS.timeout, this.onEvent);
    unsubscribe(LOCK_CHANNELS.lost, this.onEvent);
  }
}
