// node:fs plus the one globSync form the conformance bundle uses (`**/<file name>` under a cwd,
// in its tier-check command), for Node 20 where fs.globSync does not exist.
import fs from 'node:fs';
import path from 'node:path';

export * from 'node:fs';
export default fs;

const ANY_DEPTH_FILE = /^\*\*\/([^*?[\]{}/]+)$/;

/** Relative paths (from `cwd`) of every file named like `**\/name` matches. Other patterns throw. */
export function globSync(pattern, options = {}) {
  const match = typeof pattern === 'string' ? ANY_DEPTH_FILE.exec(pattern) : null;
  if (match === null) throw new Error(`fs.globSync shim: unsupported pattern ${String(pattern)}`);
  const cwd = options.cwd === undefined ? process.cwd() : String(options.cwd);
  const entries = fs.readdirSync(cwd, { recursive: true, withFileTypes: true });
  return entries
    .filter((entry) => entry.isFile() && entry.name === match[1])
    .map((entry) => path.relative(cwd, path.join(entry.parentPath ?? entry.path, entry.name)));
}
