import { describe, expect, it } from '@jest/globals';
import { checkKeyHygiene } from '../../chaos/checks/key-hygiene';

const kept = ['chaos:twin:', 'chaos:fenced:'];

describe('checker: keys without a TTL', () => {
  it('passes lock keys that all expire, and the workloads values kept on purpose', () => {
    const result = checkKeyHygiene({
      lock: [
        { key: 'lock:{k}:fence', ttl: 3_600 },
        { key: 'lock:{k}', ttl: 1 },
      ],
      resource: [{ key: 'chaos:twin:{k}', ttl: -1 }],
      keptPrefixes: kept,
    });
    expect(result.violations).toEqual([]);
    expect(result.stats).toMatchObject({ lockKeys: 2, lockKeyKinds: { owner: 1, queue: 0, fence: 1 } });
  });

  it('fails a lock key and a resource key left without a TTL', () => {
    const result = checkKeyHygiene({
      lock: [{ key: 'lock:{k}:q', ttl: -1 }],
      resource: [{ key: 'stray', ttl: -1 }],
      keptPrefixes: kept,
    });
    expect(result.violations).toEqual([
      { check: 'key hygiene: lock keys without a TTL', detail: ['lock:{k}:q'] },
      { check: 'key hygiene: resource keys without a TTL', detail: ['stray'] },
    ]);
  });

  it('checks every node of a quorum, naming the node of a key left without a TTL', () => {
    const lock = [
      { key: 'lock:{k}', ttl: 1, node: 'n1' },
      { key: 'lock:{k}:w', ttl: 3, node: 'n1' },
      { key: 'lock:{k}:fence', ttl: 3_600, node: 'n2' },
    ];
    const passing = checkKeyHygiene({ lock, resource: [], keptPrefixes: kept });
    expect(passing.violations).toEqual([]);
    expect(passing.stats).toMatchObject({ lockKeys: 3, lockKeyKinds: { owner: 1, waiters: 1, fence: 1 } });
    const failing = checkKeyHygiene({
      lock: [...lock, { key: 'lock:{k}:w', ttl: -1, node: 'n4' }],
      resource: [],
      keptPrefixes: kept,
    });
    expect(failing.violations).toEqual([
      { check: 'key hygiene: lock keys without a TTL', detail: ['n4: lock:{k}:w'] },
    ]);
  });
});
