// The --calls file (JSON Lines: {"tool", "arguments"} or {"method", "params"}), each call made once, and
// each answer measured with the edge's own functions: the message's bytes, its channels and duplicated
// bytes (core/measure.ts), and its size for each host (hosts/result-size.ts).
import { isRecord } from '../core/bytes.js';
import { emptyChannels, measureMessage } from '../core/measure.js';
import type { ResultChannels } from '../core/types.js';
import type { HostProfile } from '../hosts/profiles.js';
import { hostVisibleText, measureForHost } from '../hosts/result-size.js';
import { type HostShare, shareOf } from './catalog.js';
import type { AuditSession } from './session.js';

export interface CallSpec {
  /** 1-based line of the calls file. */
  line: number;
  method: string;
  tool: string | undefined;
  params: Record<string, unknown>;
}

export class CallsFileError extends Error {}

/** The calls of a JSON Lines text; blank lines and lines starting with `#` are skipped. */
export function parseCallsFile(text: string, source: string): CallSpec[] {
  const calls: CallSpec[] = [];
  const lines = text.split(/\r?\n/);
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!.trim();
    if (line === '' || line.startsWith('#')) continue;
    const where = `${source}:${i + 1}`;
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch (error) {
      throw new CallsFileError(`${where}: not JSON (${(error as Error).message})`);
    }
    if (!isRecord(value)) throw new CallsFileError(`${where}: expected an object`);
    if (typeof value.tool === 'string') {
      const args = value.arguments ?? {};
      if (!isRecord(args)) throw new CallsFileError(`${where}: "arguments" must be an object`);
      calls.push({
        line: i + 1,
        method: 'tools/call',
        tool: value.tool,
        params: { name: value.tool, arguments: args },
      });
    } else if (typeof value.method === 'string') {
      const params = value.params ?? {};
      if (!isRecord(params)) throw new CallsFileError(`${where}: "params" must be an object`);
      const tool = value.method === 'tools/call' && typeof params.name === 'string' ? params.name : undefined;
      calls.push({ line: i + 1, method: value.method, tool, params });
    } else {
      throw new CallsFileError(
        `${where}: expected {"tool": NAME, "arguments": {...}} or {"method": METHOD, "params": {...}}`,
      );
    }
  }
  return calls;
}

export interface ResourceLinkFacts {
  uri: string | undefined;
  hasSize: boolean;
  hasMimeType: boolean;
}

export interface CallHostSize extends HostShare {
  /** What the host does with a result past its budget. */
  past: string;
}

export interface CallReport {
  line: number;
  method: string;
  tool?: string;
  /** Bytes of the whole answer as the server sent it (0 when none came). */
  bytes: number;
  /** The bytes counted only in part: the answer was over --max-message-bytes. */
  bytesAtLeast?: true;
  /** For a tool result: bytes of `content` (every block) and of `structuredContent`, as sent. */
  channels: { content: number; structuredContent: number; blocks: ResultChannels } | null;
  duplicatedBytes: number;
  isError: boolean;
  /** A result with isError: the start of its text blocks, what the model would read first. */
  isErrorText?: string;
  /** A JSON-RPC error, or no answer at all. */
  error?: { code: number | undefined; message: string };
  resourceLinks: { count: number; withSize: number; withMimeType: number; links: ResourceLinkFacts[] };
  hosts: Record<string, CallHostSize>;
}

function resourceLinksOf(result: Record<string, unknown>): CallReport['resourceLinks'] {
  const blocks = Array.isArray(result.content) ? result.content : [];
  const links: ResourceLinkFacts[] = blocks
    .filter((block): block is Record<string, unknown> => isRecord(block) && block.type === 'resource_link')
    .map((block) => ({
      uri: typeof block.uri === 'string' ? block.uri : undefined,
      hasSize: typeof block.size === 'number',
      hasMimeType: typeof block.mimeType === 'string',
    }));
  return {
    count: links.length,
    withSize: links.filter((l) => l.hasSize).length,
    withMimeType: links.filter((l) => l.hasMimeType).length,
    links,
  };
}

/** A resources/read result as the text a host would show: its contents as embedded resources. */
function asToolResult(method: string, result: Record<string, unknown>): Record<string, unknown> {
  if (method === 'tools/call') return result;
  const contents = Array.isArray(result.contents) ? result.contents : [];
  return { content: contents.map((resource) => ({ type: 'resource', resource })) };
}

const NO_LINKS: CallReport['resourceLinks'] = { count: 0, withSize: 0, withMimeType: 0, links: [] };

/** How much of an isError result's text the report keeps. */
export const IS_ERROR_TEXT_CHARS = 200;

/** The start of an isError result's text blocks (ellipsis when cut); nothing for another result. */
function isErrorTextOf(result: Record<string, unknown>): { isErrorText: string } | Record<string, never> {
  if (result.isError !== true) return {};
  const text = hostVisibleText(result, 'content');
  if (text.length <= IS_ERROR_TEXT_CHARS) return { isErrorText: text };
  // Never half a surrogate pair.
  const end = /[\ud800-\udbff]/.test(text.charAt(IS_ERROR_TEXT_CHARS - 1))
    ? IS_ERROR_TEXT_CHARS - 1
    : IS_ERROR_TEXT_CHARS;
  return { isErrorText: `${text.slice(0, end)}…` };
}

/** A call without a result to measure: a JSON-RPC error, an answer too large to hold, or no call made. */
function unmeasured(
  call: CallSpec,
  bytes: number,
  error: NonNullable<CallReport['error']>,
  bytesAtLeast = false,
): CallReport {
  return {
    line: call.line,
    method: call.method,
    ...(call.tool !== undefined ? { tool: call.tool } : {}),
    bytes,
    ...(bytesAtLeast ? { bytesAtLeast: true as const } : {}),
    channels: null,
    duplicatedBytes: 0,
    isError: false,
    error,
    resourceLinks: NO_LINKS,
    hosts: {},
  };
}

export async function runCall(
  session: AuditSession,
  call: CallSpec,
  profiles: readonly HostProfile[],
  maxTokenizedChars: number,
  timeoutMs: number,
): Promise<CallReport> {
  if (timeoutMs <= 0) {
    return unmeasured(call, 0, { code: undefined, message: "not made: the audit's --timeout had passed" });
  }
  const head = {
    line: call.line,
    method: call.method,
    ...(call.tool !== undefined ? { tool: call.tool } : {}),
  };
  const answer = await session.request(call.method, call.params, timeoutMs);
  if (answer.kind === 'oversized') {
    const message = 'the answer is over --max-message-bytes: not measured';
    return unmeasured(call, answer.totalBytes, { code: undefined, message }, true);
  }
  if (answer.kind === 'error') {
    return unmeasured(call, answer.raw?.bytes.length ?? 0, { code: answer.code, message: answer.message });
  }
  const measured = measureMessage(answer.raw.bytes, answer.raw.value, {
    method: call.method,
    tool: call.tool,
  });
  const blocks = measured.channels;
  const hosts: Record<string, CallHostSize> = {};
  const shown = asToolResult(call.method, answer.result);
  for (const profile of profiles) {
    const size = measureForHost(profile, shown, blocks ?? emptyChannels(), maxTokenizedChars, true);
    const share = shareOf(size.sizes);
    if (share !== undefined) hosts[profile.name] = { ...share, past: profile.past };
  }
  return {
    ...head,
    bytes: measured.envelopeBytes,
    channels:
      blocks === undefined
        ? null
        : {
            content:
              blocks.content_text +
              blocks.content_image +
              blocks.content_audio +
              blocks.content_resource_link +
              blocks.content_resource,
            structuredContent: blocks.structured,
            blocks,
          },
    duplicatedBytes: measured.duplicatedBytes,
    isError: answer.result.isError === true,
    ...isErrorTextOf(answer.result),
    resourceLinks: resourceLinksOf(answer.result),
    hosts,
  };
}
