// What the schema's validation issues become: problems worded for an operator, at the line of the key
// they concern, sorted top to bottom.
import type { Document, LineCounter } from 'yaml';
import type { core } from 'zod';
import { type ConfigProblem, formatKeyPath, type PathSegment } from './config-error.js';
import type { IssueElsewhere } from './cross-checks.js';
import { allowedKeysAt, unknownKeyReason } from './did-you-mean.js';
import { locate } from './yaml-positions.js';

function describeValue(input: unknown): string {
  if (input === null || input === undefined) return 'nothing';
  if (Array.isArray(input)) return 'a list';
  if (typeof input === 'object') return 'a mapping';
  if (typeof input === 'string') return JSON.stringify(input);
  return String(input);
}

const EXPECTED_NAMES: Readonly<Record<string, string>> = {
  object: 'a mapping',
  array: 'a list',
  string: 'a string',
  number: 'a number',
  int: 'an integer',
  boolean: 'true or false',
};

export function reasonOf(issue: core.$ZodIssue): string {
  switch (issue.code) {
    case 'invalid_type':
      if (issue.input === undefined) return 'is required';
      if (issue.message.startsWith('Invalid input')) {
        return `expected ${EXPECTED_NAMES[issue.expected] ?? issue.expected}, got ${describeValue(issue.input)}`;
      }
      return `${issue.message}, got ${describeValue(issue.input)}`;
    case 'invalid_value':
      return `expected one of ${issue.values.map(String).join(', ')}; got ${describeValue(issue.input)}`;
    case 'too_small':
      if (issue.origin === 'string') return 'must not be empty';
      if (issue.origin === 'array') return `must list at least ${String(issue.minimum)}`;
      return `must be at least ${String(issue.minimum)}, got ${describeValue(issue.input)}`;
    case 'too_big':
      return `must be at most ${String(issue.maximum)}, got ${describeValue(issue.input)}`;
    case 'invalid_key': {
      const inner = issue.issues[0];
      const why = inner ? reasonOf(inner as core.$ZodIssue) : issue.message;
      return `invalid name ${describeValue(issue.input)}: ${why}`;
    }
    default:
      return issue.message;
  }
}

export function toSegments(path: readonly PropertyKey[]): PathSegment[] {
  return path.map((segment) => (typeof segment === 'number' ? segment : String(segment)));
}

/** The `elsewhere` of a cross-check issue (cross-checks.ts), if it has one. */
function elsewhereOf(issue: core.$ZodIssue): IssueElsewhere | undefined {
  const elsewhere: unknown = issue.code === 'custom' ? issue.params?.elsewhere : undefined;
  if (typeof elsewhere !== 'object' || elsewhere === null) return undefined;
  const { path, message } = elsewhere as Partial<IssueElsewhere>;
  return Array.isArray(path) && typeof message === 'string' ? { path, message } : undefined;
}

export function problemsOfIssues(
  issues: readonly core.$ZodIssue[],
  doc: Document,
  lineCounter: LineCounter,
): ConfigProblem[] {
  const problems: ConfigProblem[] = [];
  const add = (path: PathSegment[], target: 'key' | 'value', reason: string): void => {
    const position = locate(doc, lineCounter, path, target);
    problems.push({ keyPath: formatKeyPath(path), line: position?.line, column: position?.column, reason });
  };
  for (const issue of issues) {
    const path = toSegments(issue.path);
    if (issue.code === 'unrecognized_keys') {
      const allowed = allowedKeysAt(path);
      for (const key of issue.keys) add([...path, key], 'key', unknownKeyReason(key, allowed));
    } else if (
      issue.code === 'custom' &&
      elsewhereOf(issue) !== undefined &&
      !locate(doc, lineCounter, path, 'key')
    ) {
      const elsewhere = elsewhereOf(issue);
      if (elsewhere !== undefined) add(elsewhere.path, 'value', elsewhere.message);
    } else {
      add(path, issue.code === 'invalid_key' ? 'key' : 'value', reasonOf(issue));
    }
  }
  return problems;
}

/** Top to bottom; problems without a line first (they concern the file as a whole). */
export function sortedUnique(problems: readonly ConfigProblem[]): ConfigProblem[] {
  const seen = new Set<string>();
  const unique = problems.filter((problem) => {
    const key = `${problem.line}:${problem.column}:${problem.keyPath}:${problem.reason}`;
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
  return unique.sort((a, b) => (a.line ?? 0) - (b.line ?? 0) || (a.column ?? 0) - (b.column ?? 0));
}
