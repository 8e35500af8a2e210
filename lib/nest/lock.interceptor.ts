/**
 * Runs a call under a lock: resolve the key from the arguments, wait for the lock, run, release. Every
 * @Locked method delegates here (the instance is injected into the decorated class), and it is also a
 * Nest interceptor for routes marked with @LockedRoute. Sync and Promise results give a Promise;
 * Observable results give an Observable that takes the lock on subscribe and holds it until it
 * completes, errors or is unsubscribed. The request a call serves reaches it through LockService
 * (lib/nest/request-scope.ts carries it), not through here.
 */
import {
  type CallHandler,
  type ExecutionContext,
  Inject,
  Injectable,
  type NestInterceptor,
  Optional,
} from '@nestjs/common';
import { isObservable, Observable, of } from 'rxjs';
import { LockAbortedError } from '../errors/lock-aborted.error';
import { LockTimeoutError } from '../errors/lock-timeout.error';
import { type LockKeys, LockService, usingSkippable } from '../lock.service';
import { declaredOptions } from '../options/call-options';
import { prefixed, scopePrefix } from './key-scope';
import { LOCKED_ROUTE_METADATA } from './redis-lock.constants';
import type { KeyScope, LockedSpec } from './redis-lock-options.interface';

/**
 * What @Locked methods call on their lock service: all a hand-written fake given to
 * `overrideProvider(LockService)` needs.
 */
export type LockedMethodRunner = Pick<LockService, 'using'>;

/** Never provided: the module passes its options itself, and a LockInterceptor made elsewhere has none. */
const MODULE_SCOPE = 'nestjs-redis-lock: the module option scope';

@Injectable()
export class LockInterceptor implements NestInterceptor {
  constructor(
    @Inject(LockService) readonly locks: LockService,
    /** The module's `scope`: what every key is prefixed with unless the decorator says otherwise. */
    @Optional() @Inject(MODULE_SCOPE) private readonly scope: KeyScope = false,
  ) {}

  /**
   * Runs `method` on `self` with `args` under the lock `spec` names. Returns an Observable when the
   * method declares one, else a Promise of its result (undefined when skipped on timeout).
   */
  run(spec: LockedSpec, self: unknown, args: unknown[], method: (...a: unknown[]) => unknown): unknown {
    if (spec.observable) return this.observe(spec, args, () => method.apply(self, args), false);
    return this.call(spec, args, () => method.apply(self, args));
  }

  /**
   * As a Nest interceptor: the route's @LockedRoute key resolves against the handler's raw arguments.
   */
  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    const spec = Reflect.getMetadata(LOCKED_ROUTE_METADATA, context.getHandler()) as LockedSpec | undefined;
    if (!spec) return next.handle();
    return this.observe(spec, context.getArgs(), () => next.handle(), true);
  }

  /** The lock key(s) of one call: the spec's, resolved from the arguments, with its scope in front. */
  private keyOf(spec: LockedSpec, args: unknown[]): LockKeys {
    return prefixed(spec.key(args), scopePrefix(spec, this.scope));
  }

  /**
   * `using` with the declaration's options; one that skips on timeout says so to telemetry. renew left
   * unset falls back to the module defaults, then to true (as in `using`). The name in metrics and
   * spans is the declaration's (its template), never the resolved key. `signal` (an Observable's
   * unsubscription) ends the wait.
   */
  private hold<T>(spec: LockedSpec, key: LockKeys, fn: () => Promise<T>, signal?: AbortSignal): Promise<T> {
    const options = { ...declaredOptions(spec.options), label: spec.label, signal };
    // A grant can reach the call in the same turn as the abort: the work must not start for nobody.
    const start = signal ? () => (signal.aborted ? Promise.reject(abortedFor(key, signal)) : fn()) : fn;
    // A hand-written LockService stand-in (overrideProvider) has `using` only.
    if (spec.options.onTimeout === 'skip' && this.locks instanceof LockService) {
      return usingSkippable(this.locks, key, start, options);
    }
    return this.locks.using(key, start, options);
  }

  private async call(spec: LockedSpec, args: unknown[], invoke: () => unknown): Promise<unknown> {
    const key = this.keyOf(spec, args);
    // 'skip' is about this lock only: a LockTimeoutError from a lock the method itself takes must reach
    // the caller, not pass for a skip after the method has (partly) run.
    let started = false;
    try {
      return await this.hold(spec, key, async () => {
        started = true;
        const result = invoke();
        // An Observable the method did not declare: run it to completion under the lock.
        return isObservable(result) ? lastValue(result) : result;
      });
    } catch (error) {
      if (skipped(spec, error, started)) return undefined;
      throw error;
    }
  }

  /**
   * `answers`: the Observable is a route's, which Nest reads for the one value it answers with (the
   * last, and an Observable that completes with none is an error there): a skip then emits undefined,
   * which answers the request with no body.
   */
  private observe(
    spec: LockedSpec,
    args: unknown[],
    invoke: () => unknown,
    answers: boolean,
  ): Observable<unknown> {
    return new Observable<unknown>((subscriber) => {
      // Unsubscribing while still waiting aborts the wait; while holding, it ends the hold.
      const abort = new AbortController();
      const { signal } = abort;
      let finish: (() => void) | undefined;
      let inner: { unsubscribe(): void } | undefined;
      let started = false;
      let key: LockKeys;
      try {
        key = this.keyOf(spec, args);
      } catch (error) {
        subscriber.error(error);
        return;
      }
      this.hold(
        spec,
        key,
        () =>
          new Promise<void>((resolve, reject) => {
            finish = resolve;
            if (subscriber.closed) return resolve();
            started = true;
            const result = invoke();
            const source = isObservable(result) ? result : of(result);
            inner = source.subscribe({
              next: (value) => subscriber.next(value),
              error: reject,
              complete: resolve,
            });
            // The subscriber may have unsubscribed during that subscribe (take(1) on a value emitted
            // synchronously): the teardown ran before `inner` was set, so end the source here.
            if (subscriber.closed) inner.unsubscribe();
          }),
        signal,
      ).then(
        () => subscriber.complete(),
        (error: unknown) => {
          if (subscriber.closed) return;
          if (!skipped(spec, error, started)) return subscriber.error(error);
          if (answers) subscriber.next(undefined);
          subscriber.complete();
        },
      );
      return () => {
        abort.abort();
        inner?.unsubscribe();
        finish?.();
      };
    });
  }
}

/** What a call whose signal aborted between its grant and its start rejects with. */
function abortedFor(key: LockKeys, signal: AbortSignal): LockAbortedError {
  return new LockAbortedError(typeof key === 'string' ? key : key.join(', '), signal.reason);
}

/** Whether `error` means this call's own lock was busy and its spec says to skip (the method never ran). */
function skipped(spec: LockedSpec, error: unknown, started: boolean): boolean {
  return spec.options.onTimeout === 'skip' && error instanceof LockTimeoutError && !started;
}

/** The last value of an Observable (undefined if it completes empty), as a Promise. */
function lastValue(source: Observable<unknown>): Promise<unknown> {
  return new Promise((resolve, reject) => {
    let last: unknown;
    source.subscribe({ next: (value) => (last = value), error: reject, complete: () => resolve(last) });
  });
}
