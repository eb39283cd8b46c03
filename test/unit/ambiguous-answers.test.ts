// What the upstream sends with a key a client may read otherwise than the edge (repeated, or in another
// letter case) is never delivered as sent, in either mode: an answer is replaced by an error for the id the
// edge read (so no ceiling judged under one id is passed to a client that reads another), a notification is
// dropped with a notice, a server request dropped and answered. Judged through the real inspectors.
import { describe, expect, it } from 'vitest';
import type { LimitMode, LimitPolicy } from '../../src/core/types.js';
import { JsonResponseInspector } from '../../src/inspect/json-response.js';
import type { JudgeContext, JudgedMessage } from '../../src/inspect/message-verdict.js';
import { PendingRequests } from '../../src/inspect/pending-requests.js';
import type { RelayVerdict } from '../../src/inspect/relay-verdict.js';
import { SseResponseInspector } from '../../src/inspect/sse-response.js';
import { CEILING_CHECKS } from '../../src/proxy/filters/ceilings.js';
import { answerOutcome } from '../../src/telemetry/mcp-spans.js';
import { recordingObserver } from '../support/recording-observer.js';

/** Requests 1 (tools/call small, no ceiling of its own) and 2 (tools/call big, 10 KiB) wait for answers. */
function context(mode: LimitMode): { ctx: JudgeContext; log: unknown[]; judged: JudgedMessage[] } {
  const log: unknown[] = [];
  const judged: JudgedMessage[] = [];
  const pending = new PendingRequests({ maxEntries: 100, maxBytes: 1 << 20, ttlMs: 60_000 });
  pending.remember(1, { method: 'tools/call', tool: 'small' });
  pending.remember(2, { method: 'tools/call', tool: 'big' });
  const policy: LimitPolicy = {
    defaults: { tools: { big: { response: { maxMessageBytes: 10 * 1024 } } } },
    tenants: {},
  };
  const ctx: JudgeContext = {
    direction: 'response',
    tenant: 'default',
    policy,
    mode,
    observer: recordingObserver(log),
    answered: pending,
    answeredInSession: undefined,
    remember: () => {},
    checks: CEILING_CHECKS,
    judged: (message) => judged.push(message),
  };
  return { ctx, log, judged };
}

const text = (out: RelayVerdict): string =>
  out.toClient.map((piece) => Buffer.from(piece).toString()).join('');
/** The JSON of the data line of the one event the inspector let out. */
const dataOf = (out: RelayVerdict): unknown => {
  const line = text(out)
    .split('\n')
    .find((l) => l.startsWith('data: '));
  return JSON.parse(line?.slice('data: '.length) ?? 'null');
};
const big = `{"content":[{"type":"text","text":"${'b'.repeat(100_000)}"}]}`;

describe('a JSON answer', () => {
  for (const mode of ['enforce', 'observe'] as const) {
    it(`with "id" and "ID" (${mode}): replaced by an error for the id the edge read; the other request still waits`, () => {
      const { ctx, log, judged } = context(mode);
      const inspector = new JsonResponseInspector(ctx, null, [1]);
      inspector.push(Buffer.from(`{"jsonrpc":"2.0","id":1,"result":${big},"ID":2}`));
      const out = inspector.finish();
      expect(out.action).toBe('replace');
      const answer = JSON.parse(text(out));
      expect(answer).toEqual({
        jsonrpc: '2.0',
        id: 1,
        error: {
          code: -32603,
          message:
            'Response message has the key "ID", which differs from "id" only in letter case; a client may read it as "id", so mcp-edge did not deliver it',
          data: {
            reason: 'ambiguous_message',
            key: 'id',
            in: 'message',
            sentAs: 'ID',
            enforcedBy: 'mcp-edge',
          },
        },
      });
      expect(log).toContainEqual({
        direction: 'response',
        ambiguous: { in: 'message', key: 'id', sentAs: 'ID', idIsAmbiguous: true },
      });
      // Request 1 is settled by its replacement; request 2 was never answered.
      expect(ctx.answered?.ids()).toEqual([2]);
      expect(judged[0]).toMatchObject({ fate: 'replaced', violation: undefined, ambiguous: { key: 'id' } });
      expect(answerOutcome(judged[0]!).error?.message).toBe('mcp-edge replaced it: ambiguous key "id"');
    });
  }

  it('in a batch: only the ambiguous answer is replaced', () => {
    const { ctx } = context('enforce');
    const inspector = new JsonResponseInspector(ctx, null, [1, 2]);
    inspector.push(
      Buffer.from(
        '[{"jsonrpc":"2.0","id":1,"result":{"content":[]}},{"jsonrpc":"2.0","id":2,"result":{"content":[]},"result":{}}]',
      ),
    );
    const answers = JSON.parse(text(inspector.finish()));
    expect(answers[0]).toEqual({ jsonrpc: '2.0', id: 1, result: { content: [] } });
    expect(answers[1]).toMatchObject({ id: 2, error: { data: { key: 'result', repeated: true } } });
  });

  it('an unambiguous answer goes on as it came', () => {
    const { ctx } = context('enforce');
    const inspector = new JsonResponseInspector(ctx, null, [1]);
    const body = `{"jsonrpc":"2.0","id":1,"result":${big}}`;
    inspector.push(Buffer.from(body));
    const out = inspector.finish();
    expect(out.action).toBe('forward');
    expect(text(out)).toBe(body);
  });
});

describe('an SSE stream', () => {
  const event = (data: string | Buffer) =>
    Buffer.concat([Buffer.from('data: '), Buffer.from(data), Buffer.from('\n\n')]);

  it('a server request with "method" twice: dropped, the client told, the server answered for its id', () => {
    const { ctx } = context('enforce');
    const inspector = new SseResponseInspector(ctx, null);
    const out = inspector.push(
      event(
        '{"jsonrpc":"2.0","id":"s1","method":"roots/list","method":"sampling/createMessage","params":{}}',
      ),
    );
    expect(text(out)).toContain('"reason":"ambiguous_message"');
    expect(text(out)).toContain(
      'mcp-edge dropped a request (sampling/createMessage) on its way to the client',
    );
    expect(out.toUpstream).toEqual([
      expect.objectContaining({ id: 's1', error: expect.objectContaining({ code: -32603 }) }),
    ]);
  });

  it('an answer in a batch event (read by parsing) is replaced as a single one is', () => {
    const { ctx } = context('enforce');
    const inspector = new SseResponseInspector(ctx, null);
    const out = inspector.push(
      event(
        '[{"jsonrpc":"2.0","method":"notifications/message","params":{}},{"jsonrpc":"2.0","id":2,"Id":1,"result":{}}]',
      ),
    );
    const data = dataOf(out) as unknown[];
    expect(data[0]).toEqual({ jsonrpc: '2.0', method: 'notifications/message', params: {} });
    expect(data[1]).toMatchObject({ id: 2, error: { data: { key: 'id', sentAs: 'Id' } } });
  });

  it('an answer that is not UTF-8 (read by parsing, as a client decodes it) is replaced as well', () => {
    const { ctx } = context('enforce');
    const inspector = new SseResponseInspector(ctx, null);
    const data = Buffer.concat([
      Buffer.from('{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"'),
      Buffer.from([0xff]),
      Buffer.from('"}]},"id":2}'),
    ]);
    const answer = dataOf(inspector.push(event(data)));
    expect(answer).toMatchObject({ id: 2, error: { data: { key: 'id', repeated: true } } });
  });
});
