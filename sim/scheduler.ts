/**
 * The simulation's one source of order and time: a seeded random stream, a virtual clock in whole
 * microseconds, and one queue of events, each run alone and to completion (its promise continuations
 * included) before the next. Every timer, reply and push of a run is such an event, so the seed decides
 * the whole history and replays it exactly.
 */

/** sfc32: small, fast, and the same sequence on every platform for one seed. */
export class Rng {
  private a: number;
  private b: number;
  private c: number;
  private d: number;

  constructor(seed: number) {
    this.a = 0x9e3779b9;
    this.b = 0x243f6a88;
    this.c = 0xb7e15162;
    this.d = seed >>> 0;
    for (let i = 0; i < 12; i++) this.next();
  }

  /** A uniform 32-bit unsigned integer. */
  next(): number {
    const t = (((this.a + this.b) | 0) + this.d) | 0;
    this.d = (this.d + 1) | 0;
    this.a = this.b ^ (this.b >>> 9);
    this.b = (this.c + (this.c << 3)) | 0;
    this.c = (this.c << 21) | (this.c >>> 11);
    this.c = (this.c + t) | 0;
    return t >>> 0;
  }

  /** In [0, 1). */
  float(): number {
    return this.next() / 4294967296;
  }

  /** An integer in [min, max]. */
  int(min: number, max: number): number {
    return min + Math.floor(this.float() * (max - min + 1));
  }

  chance(p: number): boolean {
    return this.float() < p;
  }

  pick<T>(items: readonly T[]): T {
    return items[this.int(0, items.length - 1)];
  }

  /** A stream of its own, so that one part's draws do not shift another's. */
  fork(): Rng {
    return new Rng(this.next());
  }
}

/**
 * Who an event belongs to: a service (its timers, the replies and pushes it reads) or a server. A
 * paused actor's events wait until it resumes; a crashed one's are dropped.
 */
export class Actor {
  pausedUntil = 0;
  crashed = false;
  /** Total time paused, µs: its calls may settle that much later. */
  pausedFor = 0;

  /**
   * @param rate its clock's rate error (0.003: 0.3 % fast)
   * @param offsetUs where its clock starts, µs
   */
  constructor(
    readonly name: string,
    readonly rate = 0,
    readonly offsetUs = 0,
  ) {}

  /** Its own clock at virtual time `t`, in µs. */
  clockAt(t: number): number {
    return this.offsetUs + t * (1 + this.rate);
  }

  /** The virtual time at which its clock reads `clockUs`. */
  virtualAt(clockUs: number): number {
    return (clockUs - this.offsetUs) / (1 + this.rate);
  }
}

interface Event {
  at: number;
  seq: number;
  actor: Actor | null;
  run: () => void;
  cancelled: boolean;
}

/** A handle on a scheduled event, to cancel it. */
export interface Scheduled {
  cancel(): void;
}

export class Scheduler {
  /** Virtual time, µs. */
  now = 0;
  /** The actor whose event is running (its continuations included), or null for the world's own. */
  current: Actor | null = null;
  steps = 0;
  private seq = 0;
  private readonly heap: Event[] = [];
  /** Run after every step (the invariants); an error thrown there ends the run. */
  afterStep: (() => void) | undefined;

  /** Runs `run` for `actor` at virtual time `at` (µs, never before now). */
  at(at: number, actor: Actor | null, run: () => void): Scheduled {
    const event: Event = {
      at: Math.max(Math.ceil(at), this.now),
      seq: this.seq++,
      actor,
      run,
      cancelled: false,
    };
    this.push(event);
    return {
      cancel: () => {
        event.cancelled = true;
      },
    };
  }

  after(delayUs: number, actor: Actor | null, run: () => void): Scheduled {
    return this.at(this.now + delayUs, actor, run);
  }

  get pending(): number {
    return this.heap.length;
  }

  /**
   * Runs events in order until none is left, virtual time passes `until` µs, or `stop` says so. Each
   * event's promise continuations run before the next event: `drain` resolves once the microtask queue
   * is empty (a macrotask of the real event loop, the only real one a run uses).
   */
  async run(until: number, drain: () => Promise<void>, stop?: () => boolean): Promise<void> {
    while (this.heap.length > 0 && !stop?.()) {
      const event = this.pop() as Event;
      if (event.cancelled) continue;
      if (event.at > until) {
        this.push(event);
        this.now = until;
        return;
      }
      const { actor } = event;
      if (actor?.crashed) continue;
      this.now = Math.max(this.now, event.at);
      if (actor && actor.pausedUntil > this.now) {
        // A stopped process: what was due stays due, in its order, until it runs again.
        event.at = actor.pausedUntil;
        event.seq = this.seq++;
        this.push(event);
        continue;
      }
      this.current = actor;
      this.steps++;
      event.run();
      await drain();
      this.current = null;
      this.afterStep?.();
    }
  }

  private push(event: Event): void {
    const heap = this.heap;
    heap.push(event);
    let i = heap.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!before(heap[i], heap[parent])) break;
      [heap[i], heap[parent]] = [heap[parent], heap[i]];
      i = parent;
    }
  }

  private pop(): Event | undefined {
    const heap = this.heap;
    const top = heap[0];
    const last = heap.pop();
    if (heap.length > 0 && last) {
      heap[0] = last;
      let i = 0;
      for (;;) {
        const l = 2 * i + 1;
        const r = l + 1;
        let m = i;
        if (l < heap.length && before(heap[l], heap[m])) m = l;
        if (r < heap.length && before(heap[r], heap[m])) m = r;
        if (m === i) break;
        [heap[i], heap[m]] = [heap[m], heap[i]];
        i = m;
      }
    }
    return top;
  }
}

function before(a: Event, b: Event): boolean {
  return a.at < b.at || (a.at === b.at && a.seq < b.seq);
}
