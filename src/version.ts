// The package's version, read from package.json next to src/ and dist/ alike (one level up from either).
import { readFileSync } from 'node:fs';

let cached: string | undefined;

/** The version of the running mcp-edge (package.json `version`). */
export function packageVersion(): string {
  cached ??= (
    JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string }
  ).version;
  return cached;
}
