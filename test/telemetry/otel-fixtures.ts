// The OpenTelemetry SDK as an application registers it, for the telemetry suites: a MeterProvider read by
// an in-memory reader when the test collects, a tracer provider writing to an in-memory exporter, and the
// async-hooks context manager (what makes a span a child of the caller's).
import { afterAll, afterEach, beforeAll, expect } from '@jest/globals';
import { context, metrics, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { type DataPoint, type Histogram, MeterProvider, MetricReader } from '@opentelemetry/sdk-metrics';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  type ReadableSpan,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import { openTelemetryLoaded } from '../../lib/telemetry/open-telemetry';

/** A reader the test collects from when it wants (no export interval). */
class TestReader extends MetricReader {
  protected async onShutdown(): Promise<void> {}
  protected async onForceFlush(): Promise<void> {}
}

let reader: TestReader;
const spans = new InMemorySpanExporter();
export const tracerProvider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(spans)] });
const contextManager = new AsyncLocalStorageContextManager();

beforeAll(async () => {
  expect(await openTelemetryLoaded()).toBe(true);
  context.setGlobalContextManager(contextManager.enable());
});

afterAll(() => {
  context.disable();
});

afterEach(() => {
  spans.reset();
  metrics.disable();
  trace.disable();
});

/** A fresh MeterProvider, read when the test collects: its metrics start from zero. */
export function meterProvider(): MeterProvider {
  reader = new TestReader();
  return new MeterProvider({ readers: [reader] });
}

/** Registers the SDK as an application does, with fresh metrics; unregistered after the test. */
export function registerSdk(): void {
  metrics.disable();
  trace.disable();
  metrics.setGlobalMeterProvider(meterProvider());
  trace.setGlobalTracerProvider(tracerProvider);
}

/** Every data point of metric `name` now, with its attributes. */
export async function points(name: string): Promise<DataPoint<number | Histogram>[]> {
  const { resourceMetrics } = await reader.collect();
  return resourceMetrics.scopeMetrics
    .flatMap((scope) => scope.metrics)
    .filter((metric) => metric.descriptor.name === name)
    .flatMap((metric) => metric.dataPoints as DataPoint<number | Histogram>[]);
}

const matches = (p: DataPoint<number | Histogram>, where: Record<string, string>) =>
  Object.entries(where).every(([k, v]) => p.attributes[k] === v);

/** The value of the counter / up-down counter `name` for the attributes that match `where`. */
export async function sum(name: string, where: Record<string, string>): Promise<number> {
  return (await points(name))
    .filter((p) => matches(p, where))
    .reduce((total, p) => total + (p.value as number), 0);
}

/** The histogram `name`'s points matching `where`: count and sum. */
export async function histogram(
  name: string,
  where: Record<string, string>,
): Promise<{ count: number; sum: number }> {
  const matching = (await points(name)).filter((p) => matches(p, where));
  return {
    count: matching.reduce((n, p) => n + (p.value as Histogram).count, 0),
    sum: matching.reduce((n, p) => n + ((p.value as Histogram).sum ?? 0), 0),
  };
}

/** The spans finished so far with this name. */
export const finished = (name: string): ReadableSpan[] =>
  spans.getFinishedSpans().filter((s) => s.name === name);

/** The span id of a span's parent. */
export const parentOf = (span: ReadableSpan): string | undefined => span.parentSpanContext?.spanId;
