// Jest's global set-up and tear-down for spawnWorker() (test/support/processes.ts): each worker in
// test/workers is bundled once per run, with esbuild (what tsx compiles with, so the same TypeScript
// semantics), into one ES module whose packages stay imports. A worker then starts as plain Node: about
// 0.4 s instead of tsx's 0.9 s on an idle machine, and it is started some ninety times per run, most of
// them in the busy-machine run, where each start costs several times as much.
import { mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { build } from 'esbuild';

/** Where the bundles of this run are, for spawnWorker() in jest's workers (they inherit the environment). */
export const BUNDLES_VARIABLE = 'LOCK_TEST_WORKER_BUNDLES';

/** Per client library, the package lock-clients.ts imports for the other one, and what it uses of it. */
const UNUSED_BY = {
  ioredis: { package: 'redis', names: ['createClient', 'createCluster'] },
  'node-redis': { package: 'ioredis', names: ['Cluster', 'Redis'] },
};

/**
 * An esbuild plugin: lock-clients.ts's import of `unused.package` becomes a module whose exports throw,
 * saying so, if called. Other files' imports of it (a worker's own ioredis client) stay as they are.
 */
function leaveOut(unused, library) {
  return {
    name: `leave-out-${unused.package}`,
    setup(build) {
      build.onResolve({ filter: new RegExp(`^${unused.package}$`) }, (args) =>
        args.importer.endsWith(join('support', 'lock-clients.ts'))
          ? { path: unused.package, namespace: 'left-out' }
          : undefined,
      );
      build.onLoad({ filter: /.*/, namespace: 'left-out' }, () => ({
        contents: unused.names
          .map(
            (name) =>
              `export function ${name}() { throw new Error('${unused.package} is left out of the ${library} bundles of test/workers'); }`,
          )
          .join('\n'),
        loader: 'js',
      }));
    },
  };
}

export default async function bundleWorkers() {
  const sources = join(process.cwd(), 'test', 'workers');
  // Inside the repository, so that the bundles' package imports resolve to its node_modules; one directory
  // per run, since CI runs two jest processes at a time on one clone.
  const cache = join(process.cwd(), 'node_modules', '.cache', 'nestjs-redis-lock');
  mkdirSync(cache, { recursive: true });
  const out = mkdtempSync(join(cache, 'workers-'));
  const entryPoints = readdirSync(sources)
    .filter((file) => file.endsWith('.ts'))
    .map((file) => join(sources, file));
  // One bundle per client library the lock may run on (the run's, lockLibrary()): lock-clients.ts imports
  // both, and loading the one a worker does not use would cost it 0.15 to 0.25 s of an idle core.
  await Promise.all(
    Object.entries(UNUSED_BY).map(([library, unused]) =>
      build({
        entryPoints,
        outdir: join(out, library),
        outExtension: { '.js': '.mjs' },
        bundle: true,
        platform: 'node',
        format: 'esm',
        packages: 'external',
        plugins: [leaveOut(unused, library)],
        // The library loads its optional packages with require() where there is one (it is compiled as
        // CommonJS, and tsx runs the repository's .ts as CommonJS): give the ES module one.
        banner: {
          js: "import { createRequire as createRequireForBundle } from 'node:module'; const require = createRequireForBundle(import.meta.url);",
        },
        // Stack traces a worker reports name the TypeScript lines (the worker runs with --enable-source-maps).
        sourcemap: true,
        logLevel: 'warning',
      }),
    ),
  );
  process.env[BUNDLES_VARIABLE] = out;
}

/** Jest's global tear-down (worker-bundles.teardown.mjs). */
export function removeWorkerBundles() {
  const out = process.env[BUNDLES_VARIABLE];
  if (out) rmSync(out, { recursive: true, force: true });
}
