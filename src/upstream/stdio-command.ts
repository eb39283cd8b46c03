// What the edge knows about a stdio upstream's command before running it: the name metrics and logs use
// (never its arguments or environment, which may hold secrets), and whether the program can be found.
import { accessSync, constants } from 'node:fs';
import { basename, delimiter, isAbsolute, join, resolve } from 'node:path';

/** The program's file name: `node` for `/usr/bin/node server.js`. */
export function stdioProgramName(program: string): string {
  return basename(program) || program;
}

function isExecutable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** Where the program would be found: a path (relative to cwd) as given, a bare name on the child's PATH. */
export function resolveProgram(program: string, path: string | undefined, cwd: string): string | undefined {
  if (program.includes('/')) {
    const at = isAbsolute(program) ? program : resolve(cwd, program);
    return isExecutable(at) ? at : undefined;
  }
  for (const dir of (path ?? '').split(delimiter)) {
    if (dir === '') continue;
    const candidate = join(dir, program);
    if (isExecutable(candidate)) return candidate;
  }
  return undefined;
}
