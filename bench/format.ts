/** Number and table formatting shared by the benchmark's reports. */

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
