// The refusals table against the error contract operators read (docs/operations.md, "What each error means"):
// every reason the edge answers with is there, with the HTTP status it comes with. The samples are typed by
// the table's names, so a row added without one does not compile.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import {
  type EdgeHttpError,
  edgeAnswer,
  edgeError,
  endingOutcome,
  type JsonRpcErrorMessage,
} from '../../src/core/refusals/answers.js';
import type { AnswerName, EndingName, ErrorName } from '../../src/core/refusals/table.js';
import type { LimitViolation } from '../../src/core/types.js';
import { repoPath } from '../deploy/repo-files.js';

const violation = (
  limit: LimitViolation['limit'],
  direction: LimitViolation['direction'],
): LimitViolation => ({
  limit,
  direction,
  limitValue: 10,
  observedValue: 20,
  observedIsLowerBound: false,
  tenant: 't',
  method: 'tools/call',
  tool: 'x',
  id: 1,
});
const ambiguous = { in: 'params', key: 'name', sentAs: 'Name', idIsAmbiguous: false } as const;
const quota = {
  rule: 'r',
  window: '1m',
  measure: 'requests',
  limit: 1,
  used: 1,
  retryAfterSeconds: 1,
} as const;
const diagnostic = undefined;

/** Each refusal the edge answers a request with, as it answers. */
const ANSWERS: { readonly [K in AnswerName]: () => EdgeHttpError[] } = {
  empty_batch: () => [edgeAnswer('empty_batch', {})],
  not_json_rpc: () => [edgeAnswer('not_json_rpc', {})],
  not_json: () => [edgeAnswer('not_json', { detail: 'Unexpected end of JSON input' })],
  ambiguous_request: () => [edgeAnswer('ambiguous_request', { ambiguous })],
  header_mismatch: () => [
    edgeAnswer('header_mismatch', {
      mismatch: { header: 'Mcp-Method', field: 'method', body: 'tools/call', sent: 'tools/list' },
    }),
  ],
  request_over_ceiling: () =>
    (['request.maxBodyBytes', 'request.maxJsonDepth'] as const).map((limit) =>
      edgeAnswer('request_over_ceiling', { violation: violation(limit, 'request') }),
    ),
  unsupported_content_type: () => [edgeAnswer('unsupported_content_type', { contentType: 'text/plain' })],
  unsupported_content_encoding: () => [edgeAnswer('unsupported_content_encoding', { coding: 'gzip' })],
  unreadable_body: () => [edgeAnswer('unreadable_body', { detail: 'aborted' })],
  unhandled_request: () => [edgeAnswer('unhandled_request', { status: 400, detail: 'bad' })],
  not_found: () => [edgeAnswer('not_found', { listenPath: '/mcp', path: '/x' })],
  no_public_url: () => [edgeAnswer('no_public_url', {})],
  invalid_host: () => [edgeAnswer('invalid_host', { host: 'a b' })],
  forbidden_host: () => [edgeAnswer('forbidden_host', { host: 'h' })],
  forbidden_origin: () => [edgeAnswer('forbidden_origin', { origin: 'http://o' })],
  cors_not_granted: () => [edgeAnswer('cors_not_granted', { origin: 'http://o' })],
  method_not_allowed: () => [edgeAnswer('method_not_allowed', { allow: 'POST' })],
  unauthenticated: () => [edgeAnswer('unauthenticated', { detail: 'no key', wwwAuthenticate: 'Bearer' })],
  session_required: () => [edgeAnswer('session_required', { method: 'GET' })],
  session_not_found: () => [edgeAnswer('session_not_found', { sessionId: 's' })],
  get_stream_open: () => [edgeAnswer('get_stream_open', {})],
  unattributable: () => [edgeAnswer('unattributable', { answersServer: true })],
  upstream_malformed: () => [edgeAnswer('upstream_malformed', { detail: 'not JSON-RPC' })],
  id_in_use: () => [edgeAnswer('id_in_use', { detail: 'id 1 in use' })],
  session_streams_full: () => [edgeAnswer('session_streams_full', { max: 1 })],
  stream_connections_full: () => [edgeAnswer('stream_connections_full', { max: 1 })],
  processes_full: () => [
    edgeAnswer('processes_full', {
      bound: { key: 'maxProcesses', limit: 1, setting: 'upstream.stdio.maxProcesses' },
    }),
  ],
  quota_exceeded: () => [edgeAnswer('quota_exceeded', { quota: { ...quota, tenant: 't', tool: undefined } })],
  quota_keys_exhausted: () => [
    edgeAnswer('quota_keys_exhausted', {
      share: { tenant: 't', keysPerTenant: 1, maxKeys: 1, tenants: 1, rule: 'r', retryAfterSeconds: 1 },
    }),
  ],
  quota_store_unavailable: () => [edgeAnswer('quota_store_unavailable', { retryAfterSeconds: 1 })],
  pagination_bound: () => [edgeAnswer('pagination_bound', { method: 'tools/list', page: 3, maxPages: 2 })],
  shutting_down: () => [edgeAnswer('shutting_down', {})],
  ended_by_shutdown: () => [edgeAnswer('ended_by_shutdown', {})],
  upstream_timeout: () => [edgeAnswer('upstream_timeout', { diagnostic })],
  upstream_unreachable: () => [edgeAnswer('upstream_unreachable', { diagnostic })],
  upstream_capacity: () => [edgeAnswer('upstream_capacity', { diagnostic })],
  upstream_failed: () => [edgeAnswer('upstream_failed', { diagnostic })],
  edge_failure: () => [edgeAnswer('edge_failure', {})],
  stream_complete: () => [edgeAnswer('stream_complete', {})],
  preflight: () => [edgeAnswer('preflight', { headers: {} })],
};

/**
 * Each error that only ever stands inside an answer. The stdio child's `undelivered_request` is answered to
 * the MCP server, not a client: its reasons are mcp_edge_undelivered_messages_total's, documented there.
 */
const IN_ANSWERS: {
  readonly [K in Exclude<ErrorName, AnswerName | 'undelivered_request'>]: () => JsonRpcErrorMessage;
} = {
  answer_over_ceiling: () =>
    edgeError('answer_over_ceiling', { violation: violation('response.maxMessageBytes', 'response') }, 1),
  answer_over_host_budget: () =>
    edgeError(
      'answer_over_host_budget',
      {
        violation: {
          host: 'h',
          title: 'H',
          unit: 'tokens',
          budget: 1,
          observed: 2,
          observedIsLowerBound: false,
          tenant: 't',
          tool: 'x',
          id: 1,
        },
      },
      1,
    ),
  ambiguous_answer: () => edgeError('ambiguous_answer', { ambiguous }, 1),
  answer_stream_ended: () => edgeError('answer_stream_ended', {}, 1),
  answer_stream_broke_off: () => edgeError('answer_stream_broke_off', {}, 1),
  answer_stream_silent: () => edgeError('answer_stream_silent', { silentMs: 1 }, 1),
  answer_framing_too_large: () => edgeError('answer_framing_too_large', {}, 1),
  answer_line_too_large: () => edgeError('answer_line_too_large', { totalBytes: 1 }, 1),
  answer_lost: () => edgeError('answer_lost', { detail: 'exited with code 1' }, 1),
};

/** The rows of "What each error means": the reasons each names, and its HTTP status column. */
function documentedErrors(): { reasons: string[]; status: string }[] {
  const doc = readFileSync(repoPath('docs/operations.md'), 'utf8');
  const section = doc.slice(doc.indexOf('### What each error means'), doc.indexOf('### Common situations'));
  return section
    .split('\n')
    .filter((line) => line.startsWith('| `'))
    .map((line) => {
      const [reasons = '', status = ''] = line.split(' | ');
      return { reasons: [...reasons.matchAll(/`(\w+)`/g)].map((m) => m[1] ?? ''), status };
    });
}

function reasonOf(error: JsonRpcErrorMessage): string {
  return String(error.error.data.reason);
}

describe('the refusals table', () => {
  it('every reason the edge answers with is in operations.md, with the HTTP status it comes with', () => {
    const documented = documentedErrors();
    expect(documented.length).toBeGreaterThan(15);
    const missing: string[] = [];
    for (const [name, answersOf] of Object.entries(ANSWERS)) {
      for (const answer of answersOf()) {
        if (answer.body === '') continue;
        const reason = reasonOf(JSON.parse(answer.body) as JsonRpcErrorMessage);
        const status = String(answer.status);
        if (!documented.some((row) => row.reasons.includes(reason) && row.status.includes(status)))
          missing.push(`${name}: ${reason} ${status}`);
      }
    }
    for (const [name, errorOf] of Object.entries(IN_ANSWERS)) {
      const reason = reasonOf(errorOf());
      if (!documented.some((row) => row.reasons.includes(reason))) missing.push(`${name}: ${reason}`);
    }
    expect(missing).toEqual([]);
  });

  it('an ending names the outcome of its row; an answer carries it', () => {
    const endings: EndingName[] = ['answer_stream_broke_off', 'answer_stream_silent', 'ended_by_shutdown'];
    expect(endings.map(endingOutcome)).toEqual(['upstream_stream_failed', 'upstream_timeout', 'shutdown']);
    expect(endingOutcome('edge_failure')).toBe(edgeAnswer('edge_failure', {}).outcome);
  });
});
