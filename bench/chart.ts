/**
 * The wait-time chart (docs/bench/wait-times.svg): per library, the distribution of the time from calling
 * acquire() to holding the lock, in scenarios 2 and 3. Top: the cumulative distribution on a log axis.
 * Bottom: the percentiles (p50 to max) as a strip. Made with vega-lite, rendered to SVG in Node.
 *
 * Also a command: `npx tsx bench/chart.ts [results.json] [out.svg]` redraws it from a results file
 * (default bench/results/latest-full.json → docs/bench/wait-times.svg).
 */
import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { SCENARIOS } from './config';
import { LIBS, type LibName } from './ipc';
import type { LoadMetrics } from './metrics';

type Vega = typeof import('vega');
interface VegaLite {
  compile(spec: object): { spec: import('vega').Spec };
}

// vega and vega-lite are ES modules with top-level await: load them with a real import(), which the
// CommonJS output of this file would otherwise turn into require().
const importEsm = new Function('specifier', 'return import(specifier)') as (
  specifier: string,
) => Promise<unknown>;

const CHART_SCENARIOS = [2, 3];
const LIB_ORDER: LibName[] = LIBS.filter((lib) => lib !== 'raw-floor');

function scenarioLabel(id: number): string {
  const scenario = SCENARIOS.find((s) => s.id === id);
  if (scenario?.kind !== 'load') return `scenario ${id}`;
  const workers = scenario.processes * scenario.workersPerProcess;
  return `scenario ${id}: ${workers} workers, one key, ${scenario.csMs} ms inside`;
}

export function waitChartSpec(load: LoadMetrics[], caption: string): object {
  const floor = (v: number) => Math.max(v, 0.01);
  const cdfRows: object[] = [];
  const pctRows: object[] = [];
  const labels: string[] = [];
  for (const m of [...load].sort((a, b) => LIB_ORDER.indexOf(a.lib) - LIB_ORDER.indexOf(b.lib))) {
    if (!CHART_SCENARIOS.includes(m.scenario) || m.wait.n === 0) continue;
    const scenario = scenarioLabel(m.scenario);
    const lib = m.failures ? `${m.lib} (${Math.round(100 * m.failureRate)}% failed)` : m.lib;
    if (!labels.includes(lib)) labels.push(lib);
    for (const { q, v } of m.waitCdf) cdfRows.push({ scenario, lib: m.lib, label: lib, q, wait: floor(v) });
    pctRows.push({
      scenario,
      lib: m.lib,
      label: lib,
      p50: floor(m.wait.p50),
      p90: floor(m.wait.p90),
      p99: floor(m.wait.p99),
      max: floor(m.wait.max),
    });
  }
  const color = {
    field: 'lib',
    type: 'nominal',
    title: null,
    scale: { domain: LIB_ORDER },
    legend: {
      orient: 'top',
      direction: 'horizontal',
      labelFontSize: 12,
      labelLimit: 240,
      symbolStrokeWidth: 3,
    },
  };
  const x = { type: 'log', nice: false };
  return {
    $schema: 'https://vega.github.io/schema/vega-lite/v6.json',
    title: {
      text: 'Wait from acquire() to holding the lock',
      subtitle: [
        caption,
        'A fair FIFO queue gives every worker about the same wait (F = workers / throughput). The peers retry:',
        'their fast waits are the releasing worker taking the lock straight back, their slow ones the others.',
      ],
      anchor: 'start',
    },
    config: { font: 'sans-serif', view: { stroke: '#ddd' } },
    vconcat: [
      {
        data: { values: cdfRows },
        facet: { column: { field: 'scenario', type: 'nominal', title: null, header: { labelFontSize: 12 } } },
        spec: {
          width: 380,
          height: 240,
          mark: { type: 'line', interpolate: 'step-after', strokeWidth: 2 },
          encoding: {
            x: { field: 'wait', type: 'quantitative', title: 'wait, ms (log scale)', scale: x },
            y: { field: 'q', type: 'quantitative', title: 'share of acquisitions waiting ≤ x' },
            color,
            detail: { field: 'label' },
          },
        },
        resolve: { scale: { x: 'independent' } },
      },
      {
        data: { values: pctRows },
        facet: { column: { field: 'scenario', type: 'nominal', title: null, header: { labelFontSize: 0 } } },
        spec: {
          width: 380,
          height: 120,
          encoding: {
            y: { field: 'label', type: 'nominal', title: null, sort: labels, axis: { labelLimit: 260 } },
            color,
          },
          layer: [
            {
              mark: { type: 'rule', strokeWidth: 2 },
              encoding: {
                x: {
                  field: 'p50',
                  type: 'quantitative',
                  title: 'p50 ● · p90 | p99 ◆ · max ✕ (ms, log)',
                  scale: x,
                },
                x2: { field: 'max' },
              },
            },
            {
              mark: { type: 'point', filled: true, size: 70 },
              encoding: { x: { field: 'p50', type: 'quantitative' } },
            },
            {
              mark: { type: 'tick', thickness: 2, size: 14 },
              encoding: { x: { field: 'p90', type: 'quantitative' } },
            },
            {
              mark: { type: 'point', shape: 'diamond', filled: true, size: 90 },
              encoding: { x: { field: 'p99', type: 'quantitative' } },
            },
            {
              mark: { type: 'point', shape: 'cross', filled: true, size: 80 },
              encoding: { x: { field: 'max', type: 'quantitative' } },
            },
          ],
        },
        resolve: { scale: { x: 'independent' } },
      },
    ],
  };
}

export function renderWaitChart(load: LoadMetrics[], caption: string): Promise<string> {
  return renderVegaLite(waitChartSpec(load, caption));
}

/** Renders a vega-lite spec to an SVG string, in Node, without a browser. */
export async function renderVegaLite(spec: object): Promise<string> {
  const vega = (await importEsm('vega')) as Vega;
  const vegaLite = (await importEsm('vega-lite')) as VegaLite;
  const view = new vega.View(vega.parse(vegaLite.compile(spec).spec), { renderer: 'none' });
  return view.toSVG();
}

export function writeAtomically(path: string, content: string): void {
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(`${path}.tmp`, content);
  renameSync(`${path}.tmp`, path);
}

if (require.main === module) {
  const root = resolve(__dirname, '..');
  const input = resolve(process.argv[2] ?? `${root}/bench/results/latest-full.json`);
  const output = resolve(process.argv[3] ?? `${root}/docs/bench/wait-times.svg`);
  const results = JSON.parse(readFileSync(input, 'utf8')) as { load: LoadMetrics[]; caption?: string };
  renderWaitChart(results.load, results.caption ?? input).then(
    (svg) => {
      writeAtomically(output, svg);
      console.log(`wrote ${output}`);
    },
    (error: unknown) => {
      console.error(error);
      process.exit(1);
    },
  );
}
