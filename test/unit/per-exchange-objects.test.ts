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

/** Where `text` makes a WeakMap or WeakSet keyed by exchanges, as `file:line` (1-based). */
function exchangeKeyedWeakMaps(file: string, text: string): string[] {
  return text
    .split('\n')
    .flatMap((line, i) => (/new Weak(Map|Set)<\s*Exchange\b/.test(line) ? [`${file}:${i + 1}`] : []));
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

  // Each entry of a WeakMap is an ephemeron every minor GC processes while its key lives: one per exchange
  // made the traced path's minor GC four times the untraced one. A filter keeps per-exchange state in an
  // ExchangeSlot (src/proxy/filters/exchange-slot.ts).
  it('no source file keys a WeakMap or WeakSet by exchanges', () => {
    expect(exchangeKeyedWeakMaps('sample.ts', 'const traces = new WeakMap<Exchange, Trace>();')).toEqual([
      'sample.ts:1',
    ]);
    const found = filesUnder(repoPath('src'), ['.ts']).flatMap((path) =>
      exchangeKeyedWeakMaps(relative(repoPath(), path), readFileSync(path, 'utf8')),
    );
    expect(found).toEqual([]);
  });
});
