// `mcp-edge audit`'s command line: what to audit (a URL, or a stdio command after `--`) and how.
import { parseArgs } from 'node:util';
import { parseDuration, parseSize } from '../config/sizes.js';

export const AUDIT_USAGE = `  mcp-edge audit URL [--header NAME=VALUE]... [--calls FILE] [--hosts a,b,...] [--json]
                 [--fail-over HOST]... [--config FILE] [--max-pages N] [--timeout 60s]
                 [--max-message-bytes 64MiB] [--descriptor-share 0.1]
  mcp-edge audit [options] -- COMMAND [ARG...]
                                         size a server's catalog and results for every host before it
                                         ships (a stdio server is spawned as the edge spawns one);
                                         exit 1 when over a --fail-over host's budget, 3 when the
                                         server cannot be reached or initialized`;

export class AuditUsageError extends Error {}

export interface AuditOptions {
  target: { url: URL } | { command: string[] };
  headers: Record<string, string>;
  callsFile: string | undefined;
  /** Host profiles to report (undefined: every one). */
  hosts: string[] | undefined;
  json: boolean;
  failOver: string[];
  configFile: string | undefined;
  maxPages: number;
  timeoutMs: number;
  maxMessageBytes: number;
  descriptorShare: number;
}

export const DEFAULT_MAX_PAGES = 100;
export const DEFAULT_TIMEOUT = '60s';
export const DEFAULT_MAX_MESSAGE_BYTES = '64MiB';
export const DEFAULT_DESCRIPTOR_SHARE = 0.1;

const OPTIONS = {
  header: { type: 'string', multiple: true },
  calls: { type: 'string' },
  hosts: { type: 'string' },
  json: { type: 'boolean' },
  'fail-over': { type: 'string', multiple: true },
  config: { type: 'string', short: 'c' },
  'max-pages': { type: 'string' },
  timeout: { type: 'string' },
  'max-message-bytes': { type: 'string' },
  'descriptor-share': { type: 'string' },
} as const;

function flagValue<T>(flag: string, value: string, read: (v: string) => T): T {
  try {
    return read(value);
  } catch (error) {
    throw new AuditUsageError(`${flag}: ${(error as Error).message}`);
  }
}

function headerOf(text: string): [string, string] {
  const at = text.search(/[=:]/);
  const name = at > 0 ? text.slice(0, at).trim() : '';
  if (!/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(name)) {
    throw new AuditUsageError(
      `--header "${text}": expected NAME=VALUE, e.g. --header "Authorization=Bearer TOKEN"`,
    );
  }
  return [name, text.slice(at + 1).trim()];
}

/** The audit's options from the arguments after `audit`. */
export function parseAuditArgs(argv: readonly string[]): AuditOptions {
  const dash = argv.indexOf('--');
  const command = dash >= 0 ? argv.slice(dash + 1) : undefined;
  let parsed: ReturnType<
    typeof parseArgs<{ args: string[]; allowPositionals: true; options: typeof OPTIONS }>
  >;
  try {
    parsed = parseArgs({
      args: [...(dash >= 0 ? argv.slice(0, dash) : argv)],
      allowPositionals: true,
      options: OPTIONS,
    });
  } catch (error) {
    throw new AuditUsageError((error as Error).message.split('. ')[0] ?? String(error));
  }
  const { values, positionals } = parsed;
  if (positionals.length > 1) throw new AuditUsageError(`audit takes one URL, got ${positionals.join(' ')}`);
  let target: AuditOptions['target'];
  if (command !== undefined) {
    if (positionals.length > 0) throw new AuditUsageError('give a URL or -- COMMAND, not both');
    if (command.length === 0) throw new AuditUsageError('audit -- needs the server command after --');
    target = { command };
  } else {
    const text = positionals[0];
    if (text === undefined) throw new AuditUsageError('audit needs a server: a URL, or -- COMMAND [ARG...]');
    let url: URL;
    try {
      url = new URL(text);
    } catch {
      throw new AuditUsageError(`"${text}" is not a URL (for a stdio server: audit -- COMMAND [ARG...])`);
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:')
      throw new AuditUsageError(`"${text}": only http and https URLs are audited`);
    target = { url };
  }
  const maxPages = flagValue('--max-pages', values['max-pages'] ?? String(DEFAULT_MAX_PAGES), (v) => {
    const n = Number(v);
    if (!/^\d+$/.test(v) || n < 1) throw new Error(`"${v}" is not a whole number of pages >= 1`);
    return n;
  });
  const timeoutMs = flagValue('--timeout', values.timeout ?? DEFAULT_TIMEOUT, (v) => {
    const ms = parseDuration(v);
    if (ms <= 0) throw new Error('must be longer than 0');
    return ms;
  });
  const maxMessageBytes = flagValue(
    '--max-message-bytes',
    values['max-message-bytes'] ?? DEFAULT_MAX_MESSAGE_BYTES,
    (v) => {
      const bytes = parseSize(/^\d+$/.test(v) ? Number(v) : v);
      if (bytes < 1024) throw new Error('must be at least 1KiB');
      return bytes;
    },
  );
  const descriptorShare = flagValue(
    '--descriptor-share',
    values['descriptor-share'] ?? String(DEFAULT_DESCRIPTOR_SHARE),
    (v) => {
      const share = Number(v);
      if (!Number.isFinite(share) || share <= 0 || share > 1)
        throw new Error(`"${v}" is not a share from 0 to 1`);
      return share;
    },
  );
  const hosts =
    values.hosts === undefined
      ? undefined
      : values.hosts
          .split(',')
          .map((h) => h.trim())
          .filter((h) => h !== '');
  if (hosts !== undefined && hosts.length === 0)
    throw new AuditUsageError('--hosts needs at least one host name');
  return {
    target,
    headers: Object.fromEntries((values.header ?? []).map(headerOf)),
    callsFile: values.calls,
    hosts,
    json: values.json === true,
    failOver: values['fail-over'] ?? [],
    configFile: values.config,
    maxPages,
    timeoutMs,
    maxMessageBytes,
    descriptorShare,
  };
}
