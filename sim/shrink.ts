/**
 * Shortens a failing plan by taking out whatever it still fails without, one fault or call at a time,
 * until nothing more can go (the single-removal step of delta debugging). "Still fails" means the same
 * violation, its numbers aside: a shorter run failing another way is a different story to read.
 */
import type { Plan } from './plan';
import type { RunResult } from './world';

const kindOf = (violation: string | undefined) => violation?.replace(/[\d.]+/g, '#');

export async function shrink(
  plan: Plan,
  run: (plan: Plan) => Promise<RunResult>,
  budget = 400,
): Promise<Plan> {
  const target = kindOf((await run(plan)).violation);
  if (target === undefined) return plan;
  let current = plan;
  let tries = 0;
  for (let changed = true; changed && tries < budget; ) {
    changed = false;
    for (const part of ['faults', 'ops'] as const) {
      for (let i = current[part].length - 1; i >= 0 && tries < budget; i--) {
        const candidate = { ...current, [part]: current[part].filter((_, j) => j !== i) };
        tries++;
        if (kindOf((await run(candidate)).violation) === target) {
          current = candidate;
          changed = true;
        }
      }
    }
  }
  return current;
}
