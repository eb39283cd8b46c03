// A getter or setter written in an object literal costs V8 an AccessorPair allocated in the old generation,
// each time the literal is evaluated. Made per exchange, that dead pair keeps its closure (the request, the
// reply, everything they reach) alive through every minor GC until the next full one: each exchange's
// objects were promoted, and minor GC time tripled under load. Classes define their accessors once, on the
// prototype; a literal gets a method or a data property instead. This test holds src to that.
import { readFileSync } from 'node:fs';
import { relative } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import { filesUnder, repoPath } from '../deploy/repo-files.js';

/** Where `text` defines a getter or setter inside an object literal, as `file:line` (1-based). */
function literalAccessors(file: string, text: string): string[] {
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  const found: string[] = [];
  const visit = (node: ts.Node) => {
    if (
      (ts.isGetAccessorDeclaration(node) || ts.isSetAccessorDeclaration(node)) &&
      ts.isObjectLiteralExpression(node.parent)
    ) {
      const { line } = source.getLineAndCharacterOfPosition(node.getStart(source));
      found.push(`${file}:${line + 1}`);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

describe('objects made per exchange', () => {
  it('finds a getter or setter in an object literal, and none in a class', () => {
    const text = [
      'const writer = { get closed() { return true; }, sendAnswer() {} };',
      'const flag = { set on(value: boolean) {} };',
      'class Writer { get closed() { return true; } }',
    ].join('\n');
    expect(literalAccessors('sample.ts', text)).toEqual(['sample.ts:1', 'sample.ts:2']);
  });

  it('no source file defines a getter or setter in an object literal', () => {
    const files = filesUnder(repoPath('src'), ['.ts']);
    expect(files.length).toBeGreaterThan(100);
    const found = files.flatMap((path) =>
      literalAccessors(relative(repoPath(), path), readFileSync(path, 'utf8')),
    );
    expect(found).toEqual([]);
  });
});
