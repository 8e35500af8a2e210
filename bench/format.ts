/** Number and table formatting shared by the benchmark's reports. */
import type { LoadMetrics } from './metrics';

export function num(value: number, digits?: number): string {
  if (!Number.isFinite(value)) return Number.isNaN(value) ? '-' : '∞';
  const abs = Math.abs(value);
  const d = digits ?? (abs >= 100 ? 0 : abs >= 10 ? 1 : abs >= 1 ? 2 : 3);
  return value.toLocaleString('en-US', { minimumFractionDigits: d, maximumFractionDigits: d });
}

export const ms = (value: number | undefined): string => (value === undefined ? '-' : num(value));

/** A share as a whole percentage ('-' when there is none). */
export const pct = (share: number): string => (Number.isFinite(share) ? `${num(100 * share, 0)}%` : '-');

export function table(headers: string[], rows: string[][]): string {
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
  const line = (cells: string[]) =>
    cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]) : c.padStart(widths[i]))).join('  ');
  return [line(headers), line(widths.map((w) => '-'.repeat(w))), ...rows.map(line)].join('\n');
}

export const kinds = (map: Record<string, number>): string =>
  Object.entries(map)
    .map(([k, v]) => `${k} ${v}`)
    .join(', ');

/** What went wrong in a library's runs, for the line under its table: failures, release errors,
 * exceptions that escaped it, runs that did not complete. */
export function runNotes(m: LoadMetrics): string[] {
  const notes: string[] = [];
  if (m.failures) notes.push(`failures: ${kinds(m.failureKinds)}`);
  if (Object.keys(m.releaseErrors).length) notes.push(`release errors: ${kinds(m.releaseErrors)}`);
  if (m.uncaught) notes.push(`${m.uncaught} uncaught: ${m.uncaughtSamples.join(' | ')}`);
  if (m.errors.length) notes.push(`RUN ERRORS: ${m.errors.join(' | ')}`);
  return notes;
}
