// Where a key path sits in the YAML file (line and column), for every problem the loader reports.
import {
  type Document,
  isAlias,
  isCollection,
  isMap,
  isScalar,
  isSeq,
  type LineCounter,
  type Node,
} from 'yaml';
import type { PathSegment } from './config-error.js';

interface Position {
  line: number;
  column: number;
}

function positionOf(node: unknown, lineCounter: LineCounter): Position | undefined {
  const range = (node as Partial<Node> | null | undefined)?.range;
  if (!range) return undefined;
  const { line, col } = lineCounter.linePos(range[0]);
  return { line, column: col };
}

export function keyText(key: unknown): string {
  return isScalar(key) ? String(key.value) : String(key);
}

/**
 * Where a key path sits in the file. For a key that is missing, the nearest parent that exists.
 * Scalars and flow collections point at the value; block collections at their key (the value starts on a later line).
 */
export function locate(
  doc: Document,
  lineCounter: LineCounter,
  path: readonly PathSegment[],
  target: 'key' | 'value',
): Position | undefined {
  let node: unknown = doc.contents;
  let keyNode: unknown;
  for (const segment of path) {
    const container = isAlias(node) ? node.resolve(doc) : node;
    let found = false;
    if (isMap(container)) {
      const pair = container.items.find((item) => keyText(item.key) === String(segment));
      if (pair) {
        node = pair.value;
        keyNode = pair.key;
        found = true;
      }
    } else if (isSeq(container) && typeof segment === 'number' && segment < container.items.length) {
      node = container.items[segment];
      keyNode = undefined;
      found = true;
    }
    if (!found) {
      if (node === doc.contents) return undefined; // missing at the top level: no line to point at
      return positionOf(keyNode, lineCounter) ?? positionOf(node, lineCounter);
    }
  }
  if (target === 'key' || (isCollection(node) && !node.flow)) {
    return positionOf(keyNode, lineCounter) ?? positionOf(node, lineCounter);
  }
  return positionOf(node, lineCounter) ?? positionOf(keyNode, lineCounter);
}

/** The key path whose key or value covers a source offset (best effort, for YAML syntax errors). */
export function pathAtOffset(doc: Document, offset: number): PathSegment[] {
  const path: PathSegment[] = [];
  const covers = (node: unknown): boolean => {
    const range = (node as Partial<Node> | null | undefined)?.range;
    return range !== undefined && range !== null && range[0] <= offset && offset < range[2];
  };
  let node: unknown = doc.contents;
  for (;;) {
    if (isMap(node)) {
      const pair = node.items.find((item) => covers(item.key) || covers(item.value));
      if (!pair) return path;
      path.push(keyText(pair.key));
      if (covers(pair.key)) return path;
      node = pair.value;
    } else if (isSeq(node)) {
      const index = node.items.findIndex(covers);
      if (index < 0) return path;
      path.push(index);
      node = node.items[index];
    } else return path;
  }
}
