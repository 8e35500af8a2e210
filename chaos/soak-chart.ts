/**
 * The soak's curves as an SVG: heap after GC of each process and Redis' used_memory over time, the
 * warm-up shaded. `tsx chaos/soak-chart.ts [soak-result.json] [out.svg]`; by default the newest soak
 * result and docs/soak-memory.svg.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { renderVegaLite, writeAtomically } from '../bench/chart';

interface SoakResult {
  durationS: number;
  cfg: { warmupMs: number; processes: number; agents: number; keys: number };
  samples: { t: number; redis: { usedMemory: number }; procs: { heapUsed: number }[] }[];
}

export function soakChartSpec(result: SoakResult): object {
  const rows: { t: number; series: string; mb: number }[] = [];
  for (const sample of result.samples) {
    sample.procs.forEach((proc, i) => {
      rows.push({ t: sample.t, series: `process ${i}: heap after GC`, mb: proc.heapUsed / 2 ** 20 });
    });
    rows.push({ t: sample.t, series: 'Redis used_memory', mb: sample.redis.usedMemory / 2 ** 20 });
  }
  const { processes, agents, keys, warmupMs } = result.cfg;
  return {
    $schema: 'https://vega.github.io/schema/vega-lite/v6.json',
    title: {
      text: 'Soak: memory over time',
      subtitle: `${result.durationS} s, ${processes} processes x ${agents} callers over ${keys} keys; shaded: warm-up`,
    },
    width: 560,
    height: 260,
    layer: [
      {
        data: { values: [{ from: 0, to: warmupMs / 1000 }] },
        mark: { type: 'rect', color: '#eeeeee' },
        encoding: { x: { field: 'from', type: 'quantitative' }, x2: { field: 'to' } },
      },
      {
        data: { values: rows },
        mark: { type: 'line', point: true },
        encoding: {
          x: { field: 't', type: 'quantitative', title: 'time, s' },
          y: { field: 'mb', type: 'quantitative', title: 'MB', scale: { zero: true } },
          color: { field: 'series', type: 'nominal', title: null, legend: { orient: 'bottom' } },
        },
      },
    ],
  };
}

if (require.main === module) {
  const root = resolve(__dirname, '..');
  const results = join(root, 'chaos', 'results');
  const newest = readdirSync(results)
    .filter((name) => name.startsWith('soak-') && name.endsWith('.json'))
    .sort()
    .pop();
  const input = resolve(process.argv[2] ?? join(results, newest ?? 'soak.json'));
  const output = resolve(process.argv[3] ?? join(root, 'docs', 'soak-memory.svg'));
  const result = JSON.parse(readFileSync(input, 'utf8')) as SoakResult;
  renderVegaLite(soakChartSpec(result)).then(
    (svg) => {
      writeAtomically(output, svg);
      console.log(`wrote ${output} from ${input}`);
    },
    (error: unknown) => {
      console.error(error);
      process.exit(1);
    },
  );
}
