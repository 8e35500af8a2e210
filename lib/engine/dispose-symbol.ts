/**
 * Node 20 defines `Symbol.asyncDispose` in its main realm only; code running in a fresh realm (a `vm`
 * context, as test runners use) sees a Symbol without it, and a lease there would not work with
 * `await using`. Install the same registered symbol Node uses, so both realms agree on one key.
 */
const symbols = Symbol as { asyncDispose?: symbol };
symbols.asyncDispose ??= Symbol.for('nodejs.asyncDispose');

export {};
