// PGlite (PostgreSQL compiled to WebAssembly) as the resource behind the fenced-write tests: a fresh
// database per suite. initdb takes seconds (more inside jest's module sandbox), so the first suite on a
// machine keeps a copy of the new, empty data directory, and the others start from that copy.
import { existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PGlite } from '@electric-sql/pglite';

const version = (
  JSON.parse(readFileSync(join(process.cwd(), 'node_modules/@electric-sql/pglite/package.json'), 'utf8')) as {
    version: string;
  }
).version;
/** One copy per PGlite version: another version may lay its data directory out differently. */
const copy = join(tmpdir(), `nestjs-redis-lock-pglite-${version}.tar`);

export async function freshDatabase(): Promise<PGlite> {
  if (existsSync(copy)) return PGlite.create({ loadDataDir: new Blob([readFileSync(copy)]) });
  const db = await PGlite.create();
  const dump = await db.dumpDataDir('none');
  // Written aside, then renamed: a suite running beside this one never reads half a copy.
  const partial = `${copy}.${process.pid}.partial`;
  writeFileSync(partial, Buffer.from(await dump.arrayBuffer()));
  renameSync(partial, copy);
  return db;
}
