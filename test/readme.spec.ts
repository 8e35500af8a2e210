// Every TypeScript snippet in the README must compile against the real API: a doc example that does
// not compile is a bug.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { describe, expect, it } from '@jest/globals';
import ts from 'typescript';

const root = process.cwd();
const documents = ['README.md', 'docs/recipes.md'];
const snippets = documents.flatMap((doc) =>
  [...readFileSync(join(root, doc), 'utf8').matchAll(/```ts\n([\s\S]*?)```/g)].map((m) => m[1]),
);

describe('README and docs/recipes.md', () => {
  it('has TypeScript snippets', () => {
    expect(snippets.length).toBeGreaterThan(0);
  });

  it.each(snippets.map((code, i) => [i + 1, code]))('snippet %i compiles', (_, code) => {
    const dir = mkdtempSync(join(tmpdir(), 'readme-'));
    try {
      const file = join(dir, 'snippet.ts');
      writeFileSync(file, code as string);
      const program = ts.createProgram([file], {
        strict: true,
        noEmit: true,
        target: ts.ScriptTarget.ES2022,
        lib: ['lib.es2022.d.ts', 'lib.esnext.disposable.d.ts'],
        module: ts.ModuleKind.CommonJS,
        moduleResolution: ts.ModuleResolutionKind.Node10,
        esModuleInterop: true,
        experimentalDecorators: true,
        emitDecoratorMetadata: true,
        skipLibCheck: true,
        types: ['node'],
        typeRoots: [resolve(root, 'node_modules/@types')],
        baseUrl: root,
        paths: { 'nestjs-redis-lock': ['lib/index.ts'], '*': ['node_modules/*'] },
      });
      const diagnostics = ts
        .getPreEmitDiagnostics(program)
        .map((d) => ts.flattenDiagnosticMessageText(d.messageText, '\n'));
      expect(diagnostics).toEqual([]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
