// A config problem as mcp-edge reports it, `<file>:<line>:<col>: <key.path>: <reason>`, and the error that
// carries all of a file's problems at once.

export interface ConfigProblem {
  /** Dotted path of the key, list indexes in brackets (`tenancy.resolve[0].header`); '' for the file as a whole. */
  keyPath: string;
  line: number | undefined;
  column: number | undefined;
  reason: string;
}

export type PathSegment = string | number;

export function formatKeyPath(path: readonly PathSegment[]): string {
  let text = '';
  for (const segment of path) {
    text += typeof segment === 'number' ? `[${segment}]` : text === '' ? segment : `.${segment}`;
  }
  return text;
}

export function formatProblem(file: string, problem: ConfigProblem): string {
  const place = problem.line === undefined ? file : `${file}:${problem.line}:${problem.column ?? 1}`;
  return problem.keyPath === ''
    ? `${place}: ${problem.reason}`
    : `${place}: ${problem.keyPath}: ${problem.reason}`;
}

export class ConfigError extends Error {
  readonly file: string;
  readonly keyPath: string;
  readonly line: number | undefined;
  readonly column: number | undefined;
  readonly problems: readonly ConfigProblem[];

  constructor(file: string, problems: readonly ConfigProblem[]) {
    super(problems.map((problem) => formatProblem(file, problem)).join('\n'));
    this.name = 'ConfigError';
    this.file = file;
    this.problems = problems;
    const first = problems[0];
    this.keyPath = first?.keyPath ?? '';
    this.line = first?.line;
    this.column = first?.column;
  }
}
