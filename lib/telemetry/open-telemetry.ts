/**
 * OpenTelemetry, when the application has it: `@opentelemetry/api` is an optional peer dependency, loaded
 * here if installed and never required. The instruments follow the closest conventions there are
 * (`db.client.connection.*`, `aspnetcore.rate_limiting.*`): durations in seconds, outcomes as attributes.
 */
import type * as Otel from '@opentelemetry/api';

export const INSTRUMENTATION_NAME = 'nestjs-redis-lock';

/** The API module once loaded; null when it is not installed; undefined while it loads. */
let api: typeof Otel | null | undefined;

/**
 * Loads the API: synchronously where `require` exists (the published CommonJS build, so the first lock
 * call already reports), else through `import()` (an ES module host). Either way the application's own
 * copy is found, whose globals (providers, context manager) are the ones its SDK registered.
 */
function load(): void {
  if (typeof require === 'function') {
    try {
      api = require('@opentelemetry/api') as typeof Otel;
      return;
    } catch {
      api = null;
      return;
    }
  }
  import('@opentelemetry/api').then(
    (loaded) => {
      api = loaded;
    },
    () => {
      api = null;
    },
  );
}
load();

/** Resolves once the API is loaded (or known to be absent): for tests on an ES module host. */
export function openTelemetryLoaded(): Promise<boolean> {
  return new Promise((resolve) => {
    const check = () => (api === undefined ? setImmediate(check) : resolve(api !== null));
    check();
  });
}

/** The API's stand-ins while no SDK is registered (NoopMeterProvider, NoopTracerProvider). */
const isNoop = (provider: unknown): boolean =>
  typeof provider === 'object' &&
  provider !== null &&
  /^Noop(Meter|Tracer)Provider$/.test(provider.constructor.name);

/** The six instruments, from one meter. */
export interface Instruments {
  waitDuration: Otel.Histogram;
  holdDuration: Otel.Histogram;
  acquisitions: Otel.Counter;
  lost: Otel.Counter;
  waiters: Otel.UpDownCounter;
  held: Otel.UpDownCounter;
}

/** Bucket bounds (seconds) for lock waits and holds: from a local hand-off to a long job. */
const BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300];

/**
 * What one LockService reports through: the global providers, as an application registers its SDK (read
 * again on each use, so an SDK registered after the service was created is still found).
 */
export class OpenTelemetry {
  private cache: { provider: unknown; instruments: Instruments } | undefined;
  /** The global providers last looked at, and whether either records. */
  private seen: { meters: unknown; tracers: unknown; recording: boolean } | undefined;
  private tracer: Otel.Tracer | undefined;

  /** The API, or undefined when it is not installed (nothing is then reported through it). */
  get api(): typeof Otel | undefined {
    return api ?? undefined;
  }

  /**
   * The API when something would record what is reported through it: a provider the application
   * registered. The API is often installed by some other package with
   * no SDK behind it, and a call must then cost no span or metric. Read on each call, so a provider
   * registered later is followed; a provider that cannot be recognised as the API's no-op counts as one.
   */
  get recording(): typeof Otel | undefined {
    if (!api) return undefined;
    const meters = api.metrics.getMeterProvider();
    const proxy = api.trace.getTracerProvider() as Otel.TracerProvider & { getDelegate?(): unknown };
    const tracers = proxy.getDelegate?.() ?? proxy;
    const seen = this.seen;
    if (seen?.meters !== meters || seen.tracers !== tracers) {
      this.seen = { meters, tracers, recording: !isNoop(meters) || !isNoop(tracers) };
    }
    return this.seen?.recording ? api : undefined;
  }

  instruments(): Instruments | undefined {
    if (!api) return undefined;
    const provider = api.metrics.getMeterProvider();
    if (this.cache?.provider === provider) return this.cache.instruments;
    const meter = provider.getMeter(INSTRUMENTATION_NAME) as Otel.Meter;
    const advice = { explicitBucketBoundaries: BUCKETS };
    const instruments: Instruments = {
      waitDuration: meter.createHistogram('lock.wait.duration', {
        unit: 's',
        description: 'How long calls waited for a lock, by outcome.',
        advice,
      }),
      holdDuration: meter.createHistogram('lock.hold.duration', {
        unit: 's',
        description: 'How long leases were held, from grant to release or loss.',
        advice,
      }),
      acquisitions: meter.createCounter('lock.acquisitions', {
        unit: '{call}',
        description: 'Calls that asked for a lock, by outcome.',
      }),
      lost: meter.createCounter('lock.lost', {
        unit: '{lease}',
        description: 'Leases lost while held, by reason.',
      }),
      waiters: meter.createUpDownCounter('lock.waiters', {
        unit: '{call}',
        description: 'Calls of this process waiting for a lock.',
      }),
      held: meter.createUpDownCounter('lock.held', {
        unit: '{lease}',
        description: 'Leases this process holds.',
      }),
    };
    this.cache = { provider, instruments };
    return instruments;
  }

  /** The tracer: the global proxy's, which follows a later registration. */
  getTracer(): Otel.Tracer | undefined {
    if (!api) return undefined;
    this.tracer ??= api.trace.getTracer(INSTRUMENTATION_NAME) as Otel.Tracer;
    return this.tracer;
  }
}
