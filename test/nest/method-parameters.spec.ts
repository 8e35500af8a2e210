// How many arguments a method can receive, read from its source: the basis of the start-up check that
// a key template's placeholders point at arguments the method declares.
import { describe, expect, it } from '@jest/globals';
import { parameterCapacity } from '../../lib/nest/method-parameters';

const KEY = Symbol.for('computed, (key)');

class Shapes {
  none() {}
  one(x: number) {
    return x;
  }
  defaults(x: number, y = 1, { z } = { z: [1, 2] }) {
    return x + y + z.length;
  }
  rest(...all: unknown[]) {
    return all;
  }
  commented(x: string, /* a note, with a comma ( */ y?: string) {
    return x + y;
  }
  literals(x = '(,)', y = `a,${'b'}`) {
    return x + y;
  }
  async awaited(x: number) {
    return x;
  }
  [KEY](x: number, y: number) {
    return x + y;
  }
  restAfterDefault(x = Math.max(1, 2), ...more: number[]) {
    return [x, more];
  }
}

const method = (name: PropertyKey) =>
  (Shapes.prototype as unknown as Record<PropertyKey, () => unknown>)[name];

describe('parameterCapacity', () => {
  it.each<[string, PropertyKey, number]>([
    ['no parameters', 'none', 0],
    ['one', 'one', 1],
    ['defaults and destructuring count (fn.length stops at the first default)', 'defaults', 3],
    ['a rest parameter takes any number', 'rest', Number.POSITIVE_INFINITY],
    ['a comment with a comma and a bracket is not a parameter', 'commented', 2],
    ['commas and brackets in string and template defaults do not split', 'literals', 2],
    ['an async method', 'awaited', 1],
    ['a computed name with a comma and a bracket', KEY, 2],
    ['a rest parameter after a default', 'restAfterDefault', Number.POSITIVE_INFINITY],
  ])('%s', (_, name, expected) => {
    expect(parameterCapacity(method(name))).toBe(expected);
  });

  it('a source it cannot read counts as any number, so the check never refuses on a guess', () => {
    expect(parameterCapacity(Math.max)).toBe(Number.POSITIVE_INFINITY);
  });
});
