// Just enough of the Dockerfile and .dockerignore formats to check deploy/docker/Dockerfile and to replay
// its steps without Docker: instructions per stage, flags, exec-form arrays, and ignore-pattern matching.

export interface Instruction {
  keyword: string;
  /** `--name=value` flags before the arguments (COPY --from, RUN --mount, HEALTHCHECK --interval). */
  flags: Record<string, string>;
  /** The arguments after the flags, as written (continuations joined). */
  args: string;
  /** 1-based line where the instruction starts. */
  line: number;
}

export interface Stage {
  base: string;
  name: string | undefined;
  instructions: Instruction[];
}

export interface Dockerfile {
  /** ARGs declared before the first FROM, with their defaults. */
  globalArgs: Record<string, string>;
  stages: Stage[];
}

/** Joins continuation lines and drops comments and blank lines: one entry per instruction. */
function logicalLines(text: string): { text: string; line: number }[] {
  const result: { text: string; line: number }[] = [];
  let current: { text: string; line: number } | undefined;
  text.split(/\r?\n/).forEach((raw, index) => {
    const trimmed = raw.trim();
    if (trimmed.startsWith('#') || (trimmed === '' && current === undefined)) return;
    const continued = trimmed.endsWith('\\');
    const part = continued ? trimmed.slice(0, -1).trim() : trimmed;
    current =
      current === undefined
        ? { text: part, line: index + 1 }
        : { ...current, text: `${current.text} ${part}` };
    if (!continued) {
      result.push(current);
      current = undefined;
    }
  });
  if (current !== undefined) result.push(current);
  return result;
}

function splitFlags(rest: string): { flags: Record<string, string>; args: string } {
  const flags: Record<string, string> = {};
  let args = rest;
  for (let match = /^--([a-z-]+)=(\S+)\s*/.exec(args); match; match = /^--([a-z-]+)=(\S+)\s*/.exec(args)) {
    flags[match[1] ?? ''] = match[2] ?? '';
    args = args.slice(match[0].length);
  }
  return { flags, args };
}

function substitute(text: string, values: Record<string, string>): string {
  return text.replace(/\$\{([A-Za-z_][A-Za-z0-9_]*)\}|\$([A-Za-z_][A-Za-z0-9_]*)/g, (match, braced, bare) => {
    const name = (braced ?? bare) as string;
    return values[name] ?? match;
  });
}

export function parseDockerfile(text: string): Dockerfile {
  const globalArgs: Record<string, string> = {};
  const stages: Stage[] = [];
  for (const { text: line, line: number } of logicalLines(text)) {
    const [keywordRaw = '', ...restParts] = line.split(/\s+/);
    const keyword = keywordRaw.toUpperCase();
    const rest = restParts.join(' ');
    if (keyword === 'FROM') {
      const [base = '', as, name] = substitute(rest, globalArgs).split(/\s+/);
      stages.push({ base, name: as?.toUpperCase() === 'AS' ? name : undefined, instructions: [] });
      continue;
    }
    const stage = stages.at(-1);
    if (stage === undefined) {
      if (keyword !== 'ARG') throw new Error(`line ${number}: ${keyword} before the first FROM`);
      const [name = '', value = ''] = rest.split('=');
      globalArgs[name] = value;
      continue;
    }
    stage.instructions.push({ keyword, line: number, ...splitFlags(rest) });
  }
  return { globalArgs, stages };
}

/** The JSON array of an exec-form instruction (`CMD ["a", "b"]`); throws for shell form. */
export function execForm(args: string): string[] {
  const parsed: unknown = JSON.parse(args);
  if (!Array.isArray(parsed) || !parsed.every((item) => typeof item === 'string')) {
    throw new Error(`not an exec-form array: ${args}`);
  }
  return parsed;
}

export function instructionsOf(stage: Stage, keyword: string): Instruction[] {
  return stage.instructions.filter((instruction) => instruction.keyword === keyword);
}

/** The ENV values a stage sets (`ENV NAME=value` form). */
export function envOf(stage: Stage): Record<string, string> {
  const env: Record<string, string> = {};
  for (const instruction of instructionsOf(stage, 'ENV')) {
    for (const pair of instruction.args.split(/\s+/)) {
      const at = pair.indexOf('=');
      if (at > 0) env[pair.slice(0, at)] = pair.slice(at + 1);
    }
  }
  return env;
}

/** COPY sources and destination. */
export function copyParts(instruction: Instruction): { sources: string[]; destination: string } {
  const parts = instruction.args.split(/\s+/);
  const destination = parts.pop();
  if (destination === undefined || parts.length === 0) throw new Error(`line ${instruction.line}: bad COPY`);
  return { sources: parts, destination };
}

// ---- .dockerignore -----------------------------------------------------------------------------

function globToRegExp(pattern: string): RegExp {
  let source = '';
  for (let i = 0; i < pattern.length; i++) {
    const char = pattern[i] ?? '';
    if (char === '*' && pattern[i + 1] === '*') {
      source += '.*';
      i++;
    } else if (char === '*') source += '[^/]*';
    else if (char === '?') source += '[^/]';
    else source += char.replace(/[.+^${}()|[\]\\]/g, '\\$&');
  }
  return new RegExp(`^${source}$`);
}

/**
 * Whether a context path (relative, `/`-separated) is left out of the build context: the last pattern
 * that matches the path or one of its parent folders decides, `!` patterns putting it back.
 */
export function isIgnored(dockerignore: string, path: string): boolean {
  const patterns = dockerignore
    .split(/\r?\n/)
    .map((line) => line.trim())
    .filter((line) => line !== '' && !line.startsWith('#'));
  const segments = path.split('/');
  const candidates = segments.map((_, index) => segments.slice(0, index + 1).join('/'));
  let ignored = false;
  for (const pattern of patterns) {
    const negated = pattern.startsWith('!');
    const glob = (negated ? pattern.slice(1) : pattern).replace(/^\/+|\/+$/g, '');
    const regexp = globToRegExp(glob);
    if (candidates.some((candidate) => regexp.test(candidate))) ignored = !negated;
  }
  return ignored;
}
