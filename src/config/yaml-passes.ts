// The passes over the parsed YAML before validation: `__proto__` keys refused, numbers not written as
// decimal integers kept as their text, `${VAR}` references interpolated from the environment.
import { type Document, isMap, isScalar, isSeq, type Scalar } from 'yaml';
import type { PathSegment } from './config-error.js';
import { keyText } from './yaml-positions.js';

/** Calls `visit` for every scalar that is a value (never a key), with its key path. Aliases are visited at their anchor. */
function forEachValueScalar(
  node: unknown,
  path: PathSegment[],
  visit: (scalar: Scalar, path: PathSegment[]) => void,
): void {
  if (isMap(node)) {
    for (const pair of node.items) forEachValueScalar(pair.value, [...path, keyText(pair.key)], visit);
  } else if (isSeq(node)) {
    node.items.forEach((item, index) => {
      forEachValueScalar(item, [...path, index], visit);
    });
  } else if (isScalar(node)) visit(node, path);
}

/**
 * `__proto__` as a key would be dropped silently on its way into a plain object (or, worse, set a
 * prototype); refuse it wherever it appears.
 */
export function refuseProtoKeys(
  node: unknown,
  path: PathSegment[],
  problemAt: (path: PathSegment[]) => void,
): void {
  if (isMap(node)) {
    for (const pair of node.items) {
      const key = keyText(pair.key);
      if (key === '__proto__') problemAt([...path, key]);
      else refuseProtoKeys(pair.value, [...path, key], problemAt);
    }
  } else if (isSeq(node)) {
    node.items.forEach((item, index) => {
      refuseProtoKeys(item, [...path, index], problemAt);
    });
  }
}

const DECIMAL_INTEGER = /^-?(0|[1-9][0-9]*)$/;

/**
 * YAML reads `1e3`, `0x10` and `1.5` as numbers. No config value is anything but a decimal integer,
 * so such values stay the text they were written as and the schema names them ("1e3" is not a size).
 */
export function keepNonDecimalNumbersAsText(doc: Document): void {
  forEachValueScalar(doc.contents, [], (scalar) => {
    if (
      typeof scalar.value === 'number' &&
      scalar.source !== undefined &&
      !DECIMAL_INTEGER.test(scalar.source)
    ) {
      scalar.value = scalar.source;
    }
  });
}

// `$${` is a literal `${`; `${NAME}` and `${NAME:-fallback}` are references; any other `${` is a mistake.
const REFERENCE = /\$\$\{|\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}$]*))?\}|\$\{/g;

interface Interpolation {
  text: string;
  /** True when a reference (not only an escape) was replaced. */
  replaced: boolean;
  missing: string[];
  malformed: boolean;
}

function interpolate(text: string, env: Record<string, string | undefined>): Interpolation {
  const result: Interpolation = { text, replaced: false, missing: [], malformed: false };
  result.text = text.replace(
    REFERENCE,
    (match: string, name: string | undefined, fallback: string | undefined) => {
      if (match === '$${') return '${';
      if (name === undefined) {
        result.malformed = true;
        return match;
      }
      const value = Object.hasOwn(env, name) ? env[name] : undefined;
      result.replaced = true;
      // Like the shell: `:-` also covers a variable that is set but empty.
      if (fallback !== undefined) return value === undefined || value === '' ? fallback : value;
      if (value === undefined) result.missing.push(name);
      return value ?? match;
    },
  );
  return result;
}

/** An unquoted value reads as YAML would have read the text in its place: integers and booleans keep their type. */
function retypePlain(text: string): string | number | boolean {
  if (DECIMAL_INTEGER.test(text) && Number.isSafeInteger(Number(text))) return Number(text);
  if (text === 'true' || text === 'false') return text === 'true';
  return text;
}

export function interpolateEnv(
  doc: Document,
  env: Record<string, string | undefined>,
  problemAt: (path: PathSegment[], reason: string) => void,
): void {
  forEachValueScalar(doc.contents, [], (scalar, path) => {
    if (typeof scalar.value !== 'string' || !scalar.value.includes('${')) return;
    const result = interpolate(scalar.value, env);
    for (const name of result.missing) {
      problemAt(
        path,
        `environment variable ${name} is not set (write \${${name}:-fallback} to give a default)`,
      );
    }
    if (result.malformed) {
      // biome-ignore lint/suspicious/noTemplateCurlyInString: the message shows the config's own ${...} syntax
      problemAt(path, 'a "${" must start ${NAME} or ${NAME:-fallback} (write $${ for a literal "${")');
    }
    scalar.value = scalar.type === 'PLAIN' && result.replaced ? retypePlain(result.text) : result.text;
  });
}
