// What a function throws, for assertions on its fields (`code`) where `toThrow` matches only a class or
// a message: a test of the one usage error tells its kinds apart by `code`.
export function thrown(run: () => unknown): unknown {
  try {
    run();
  } catch (error) {
    return error;
  }
  throw new Error('expected the call to throw; it returned');
}
