// The compiler options a user's Nest project would have (strict, legacy decorators with metadata), with
// `nestjs-redis-lock` resolved to this repository's sources: for the tests that compile code as a user
// would write it (the README's snippets, the typed-decorator fixture).
import { resolve } from 'node:path';
import ts from 'typescript';

export function userCompilerOptions(root: string): ts.CompilerOptions {
  return {
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
    paths: {
      'nestjs-redis-lock': ['lib/index.ts'],
      'nestjs-redis-lock/testing': ['lib/testing/index.ts'],
      '*': ['node_modules/*'],
    },
  };
}
