// The overload rule set by a test itself, through the library's test hook (it is no option): a fixed
// standing-line target that trips on cue, or the door alone.
import type { LockServiceOptions } from '../../lib/core';
import { SHED_RULE, type ShedPolicy } from '../../lib/options/service-options';

export function shedRule(rule: ShedPolicy): Pick<LockServiceOptions, 'shed'> {
  return { [SHED_RULE]: rule } as Pick<LockServiceOptions, 'shed'>;
}
