/**
 * Fences in grant order: a grant made after the previous holder of the same lock stopped believing it
 * held it must carry a higher fence (the grant log, as the workers reported it).
 */
import { grantsByKey, type History, windowOf } from '../history';
import { type CheckContext, type CheckResult, Findings } from './check';

export function checkFenceOrder(
  history: History,
  ctx: CheckContext,
): CheckResult<{ fenceOrderViolations: number }> {
  const found = new Findings();
  let fenceOrderViolations = 0;
  for (const [key, list] of grantsByKey(history)) {
    for (let i = 1; i < list.length; i++) {
      const a = list[i - 1];
      const b = list[i];
      // Grants whose windows did not overlap are ordered; their fences must be too.
      if ((b.tGrant as number) > windowOf(a, ctx.now).belief && (b.fence as number) <= (a.fence as number)) {
        fenceOrderViolations++;
        found.add('fencing: a later grant got a fence not above an earlier one', {
          key,
          earlier: a.op,
          fence: a.fence,
          later: b.op,
          laterFence: b.fence,
        });
      }
    }
  }
  return { stats: { fenceOrderViolations }, violations: found.violations };
}
