/**
 * What one LockService reports about its calls: OpenTelemetry metrics and spans (when the API is
 * installed), diagnostics-channel events and the `onEvent` handler. A call that nobody would hear of
 * records nothing: `begin` returns undefined and the engine runs as if this file did not exist.
 *
 * One CallRecord follows one call from its start (`lock.acquire` span, `lock.waiters`) to its outcome
 * (`lock.wait.duration`, `lock.acquisitions`) and, once granted, its lease to the end (`lock.held`,
 * `lock.hold.duration`, `lock.lost`, and for `using` / `@Locked` the `lock.hold` span the work runs in).
 */
import type * as Otel from '@opentelemetry/api';
import { setBounded } from '../bounded-map';
import { LockAbortedError } from '../errors/lock-aborted.error';
import type { LockLostError } from '../errors/lock-lost.error';
import { LockTimeoutError } from '../errors/lock-timeout.error';
import { RequestClosedError } from '../errors/request-closed.error';
import type { Lease } from '../lease';
import { type LockEventLog, loggedEvents, refusalOf } from './event-log';
import type { LeaseObserver, ObservedLease } from './lease-observer';
import { anyChannelWatched, isWatched, type LockEvent, type LockEventKind, publish } from './lock-events';
import { type Instruments, OpenTelemetry } from './open-telemetry';
import type { LockOutcome, TelemetryOptions } from './telemetry-options';

/** `lock.name` of a call that gave none (neither `@Locked` nor the `label` option). */
export const UNNAMED = 'unnamed';

export class LockTelemetry {
  private readonly otel: OpenTelemetry;
  readonly onEvent: ((event: LockEvent) => void) | undefined;
  /** The `logger`'s writer, whose pending summaries close() writes. */
  private readonly log: LockEventLog | undefined;
  private readonly unrecordedBy = new Map<string, UnrecordedLeases>();

  constructor(options: TelemetryOptions | undefined) {
    this.otel = new OpenTelemetry();
    this.log = options?.logger ? loggedEvents(options.logger, options.onEvent) : undefined;
    this.onEvent = this.log ?? options?.onEvent;
  }

  /** The service closes: summaries of warnings still counted are written now, not lost with the process. */
  close(): void {
    this.log?.flush();
  }

  /** Starts the record of one call, or undefined when nothing would hear of it. */
  begin(name: string | undefined, keys: readonly string[], skips: boolean): CallRecord | undefined {
    const api = this.otel.recording;
    if (!api && this.onEvent === undefined && !anyChannelWatched()) return undefined;
    return new CallRecord(this, api, name ?? UNNAMED, keys, skips);
  }

  instruments(): Instruments | undefined {
    return this.otel.instruments();
  }

  tracer(): Otel.Tracer | undefined {
    return this.otel.getTracer();
  }

  /**
   * What hears of a lease whose call began while nothing listened (`begin` gave no record): its loss is
   * still told to whoever listens by then, such as a lock board opened since. One per call name.
   */
  unrecorded(name: string | undefined): LeaseObserver {
    const named = name ?? UNNAMED;
    let observer = this.unrecordedBy.get(named);
    if (!observer) {
      observer = new UnrecordedLeases(this, named);
      setBounded(this.unrecordedBy, named, observer);
    }
    return observer;
  }

  emit(kind: LockEventKind, record: CallRecord, fields: Omit<LockEvent, 'kind' | 'name' | 'keys'>): void {
    if (!isWatched(kind, this.onEvent)) return;
    publish({ kind, name: record.name, keys: record.keys, ...fields }, this.onEvent);
  }
}

/** The leases of calls named `name` that began unrecorded: only a loss is told, to whoever listens then. */
class UnrecordedLeases implements LeaseObserver {
  constructor(
    private readonly telemetry: LockTelemetry,
    private readonly name: string,
  ) {}

  attached(): void {}

  renewed(): void {}

  ended(lease: ObservedLease, lost: LockLostError | undefined): void {
    const { onEvent } = this.telemetry;
    if (!lost || !isWatched('lost', onEvent)) return;
    const { token, fence, keys } = lease;
    publish({ kind: 'lost', name: this.name, keys, token, fence, reason: lost.reason, error: lost }, onEvent);
  }
}

/** One call, from its start to the end of the lease it obtained (every key of it). */
export class CallRecord implements LeaseObserver {
  private readonly started = performance.now();
  private readonly parent: Otel.Context | undefined;
  private readonly attributes: Otel.Attributes;
  private span: Otel.Span | undefined;
  private holdSpan: Otel.Span | undefined;
  /** When the call got its lease (performance.now()); 0 until then. */
  private grantedAt = 0;
  /** Leases (one per key) made for this call and not ended yet: the hold ends with the last. */
  private parts = 0;
  private queuedOnce = false;

  constructor(
    private readonly telemetry: LockTelemetry,
    private readonly api: typeof Otel | undefined,
    readonly name: string,
    readonly keys: readonly string[],
    private readonly skips: boolean,
  ) {
    this.attributes = { 'lock.name': name };
    this.telemetry.instruments()?.waiters.add(1, this.attributes);
    if (api) {
      this.parent = api.context.active();
      const attributes: Otel.Attributes = { 'lock.name': name };
      if (keys.length === 1) attributes['lock.key'] = keys[0];
      else attributes['lock.keys'] = [...keys];
      this.span = this.telemetry
        .tracer()
        ?.startSpan(`lock.acquire ${name}`, { attributes, kind: api.SpanKind.INTERNAL }, this.parent);
    }
  }

  /** The call joined a queue (for a multi-key call, each key's queue it joins). */
  queued(token: string): void {
    if (!this.queuedOnce) {
      this.queuedOnce = true;
      this.span?.setAttribute('lock.queued', true);
    }
    this.telemetry.emit('queued', this, { token });
  }

  /**
   * Follows the call's promise to its outcome, on the way to the caller; `reentered` tells a lease the
   * call already held (from the engine, which makes both kinds) from one it was granted.
   */
  report(obtained: Promise<Lease | null>, reentered: (lease: Lease) => boolean): Promise<Lease | null> {
    return obtained.then(
      (lease) => {
        if (lease === null) this.busy();
        else if (reentered(lease)) this.reentered();
        else this.granted(lease);
        return lease;
      },
      (error: unknown) => {
        this.failed(error);
        throw error;
      },
    );
  }

  /** The call got its lease. */
  granted(lease: Lease): void {
    const waited = this.finish('acquired');
    this.grantedAt = performance.now();
    this.telemetry.instruments()?.held.add(1, this.attributes);
    if (this.span) {
      this.span.setAttribute('lock.fence', lease.fence);
      this.span.end();
    }
    this.telemetry.emit('granted', this, { token: lease.token, fence: lease.fence, waitedMs: waited });
  }

  /** The call held the lock already (reentrant): no lock taken, so no metric; the span says so. */
  reentered(): void {
    this.telemetry.instruments()?.waiters.add(-1, this.attributes);
    this.span?.setAttribute('lock.reentrant', true);
    this.span?.end();
  }

  /** tryAcquire found the lock busy: the caller goes on without it. */
  busy(): void {
    this.finish('skipped');
    this.span?.end();
  }

  /** The call failed: a timeout (or a skip), an abort, or an error. */
  failed(error: unknown): void {
    const outcome: LockOutcome =
      error instanceof LockTimeoutError
        ? this.skips
          ? 'skipped'
          : timeoutOutcome(error)
        : error instanceof LockAbortedError
          ? error.cause instanceof RequestClosedError
            ? 'abandoned'
            : 'aborted'
          : 'error';
    const waited = this.finish(outcome);
    if (this.span) {
      if (outcome === 'error' && this.api) {
        this.span.recordException(error instanceof Error ? error : String(error));
        this.span.setStatus({ code: this.api.SpanStatusCode.ERROR, message: describe(error) });
      }
      this.span.end();
    }
    if (outcome === 'timeout' || outcome === 'shed' || outcome === 'overload')
      this.telemetry.emit('timeout', this, { waitedMs: waited, error });
    else if (outcome === 'skipped')
      this.telemetry.emit('timeout', this, { waitedMs: waited, error, skipped: true });
    else if (outcome === 'aborted' || outcome === 'abandoned')
      this.telemetry.emit('aborted', this, { waitedMs: waited, error });
  }

  /**
   * Runs `work` (the function of `using`, the body of a `@Locked` method) inside a `lock.hold` span, a
   * child of the caller's span, so that what it does shows under the time the lock was held.
   */
  runHeld<T>(lease: Lease, work: () => T): T {
    const tracer = this.api ? this.telemetry.tracer() : undefined;
    if (!tracer || !this.api || !this.parent) return work();
    this.holdSpan = tracer.startSpan(
      `lock.hold ${this.name}`,
      { attributes: { 'lock.name': this.name, 'lock.fence': lease.fence } },
      this.parent,
    );
    return this.api.context.with(this.api.trace.setSpan(this.parent, this.holdSpan), work);
  }

  attached(): void {
    this.parts += 1;
  }

  renewed(lease: ObservedLease): void {
    this.telemetry.emit('renewed', this, { token: lease.token, fence: lease.fence });
  }

  ended(lease: ObservedLease, lost: LockLostError | undefined): void {
    this.parts -= 1;
    // A key taken for a call that then failed (a later key timed out): given back, never the call's.
    if (this.grantedAt === 0) return;
    const heldMs = performance.now() - this.grantedAt;
    const instruments = this.telemetry.instruments();
    if (lost) {
      instruments?.lost.add(1, { 'lock.name': this.name, 'lock.lost.reason': lost.reason });
      if (this.holdSpan && this.api) {
        this.holdSpan.setStatus({ code: this.api.SpanStatusCode.ERROR, message: lost.message });
        this.holdSpan.setAttribute('lock.lost.reason', lost.reason);
      }
      this.telemetry.emit('lost', this, {
        token: lease.token,
        fence: lease.fence,
        heldMs,
        reason: lost.reason,
        error: lost,
      });
    }
    if (this.parts !== 0) return;
    instruments?.held.add(-1, this.attributes);
    instruments?.holdDuration.record(heldMs / 1000, this.attributes);
    this.holdSpan?.end();
    if (!lost) this.telemetry.emit('released', this, { token: lease.token, fence: lease.fence, heldMs });
  }

  /** Records the wait's outcome; returns how long it waited, ms. */
  private finish(outcome: LockOutcome): number {
    const waited = performance.now() - this.started;
    const instruments = this.telemetry.instruments();
    if (instruments) {
      const attributes = { 'lock.name': this.name, 'lock.outcome': outcome };
      instruments.waiters.add(-1, this.attributes);
      instruments.waitDuration.record(waited / 1000, attributes);
      instruments.acquisitions.add(1, attributes);
    }
    this.span?.setAttribute('lock.outcome', outcome);
    this.span?.setAttribute('lock.wait.duration', waited / 1000);
    return waited;
  }
}

function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** A refusal's outcome, as the log reads it (refusalOf): a cut by its deadline is one for overload too. */
function timeoutOutcome(error: LockTimeoutError): LockOutcome {
  const refusal = refusalOf(error);
  return refusal === 'deadline' ? 'overload' : refusal;
}
