// The shell's side of the upstream seam, without sockets: how an answer made of messages is framed for the
// client (message-framing.ts, and the SSE inspector's framing of each message), and the session rules it answers from an upstream's facts (session-rules.ts).
import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { bodyRouting } from '../../src/inspect/body-routing.js';
import { PendingRequests } from '../../src/inspect/pending-requests.js';
import { SseResponseInspector } from '../../src/inspect/sse-response.js';
import { CEILING_CHECKS } from '../../src/proxy/filters/ceilings.js';
import { answersAsJson, messagesAnswer } from '../../src/proxy/message-framing.js';
import { sourceOf } from '../../src/proxy/relayed-answer.js';
import { sessionRuleAnswer } from '../../src/proxy/session-rules.js';
import type {
  MessageEvent,
  UpstreamBody,
  UpstreamExchange,
  UpstreamSessions,
} from '../../src/upstream/upstream.js';

type MessagesBody = Extract<UpstreamBody, { kind: 'messages' }>;

function messages(events: MessageEvent[], firstIsAnswer = true, preferJson = false): MessagesBody {
  const stream = new PassThrough({ objectMode: true });
  for (const event of events) stream.write(event);
  stream.end();
  return { kind: 'messages', events: stream, firstIsAnswer, preferJson };
}

const piece = (text: string, last: boolean): MessageEvent => ({
  kind: 'piece',
  bytes: Buffer.from(text),
  last,
});

/** What the client gets for `events` on an SSE answer, as the SSE inspector frames and judges them. */
function sseBytesOf(events: readonly MessageEvent[], mode: 'enforce' | 'observe'): string {
  const inspector = new SseResponseInspector(
    {
      direction: 'response',
      tenant: 'default',
      policy: { defaults: { response: { maxMessageBytes: 1 << 20 } }, tenants: {} },
      mode,
      observer: { message: () => {}, limitExceeded: () => {}, unparsable: () => {} },
      answered: new PendingRequests({ maxEntries: 10, maxBytes: 1 << 20, ttlMs: 60_000 }),
      answeredInSession: undefined,
      remember: undefined,
      checks: CEILING_CHECKS,
    },
    1 << 20,
  );
  const out = [...events.map((event) => inspector.pushMessage(event)), inspector.end()];
  return out.flatMap((verdict) => verdict.toClient.map((c) => Buffer.from(c).toString('utf8'))).join('');
}

const ANSWER = '{"jsonrpc":"2.0","id":1,"result":{"a":1}}';
const NOTE = '{"jsonrpc":"2.0","method":"notifications/progress","params":{"progress":1}}';

describe('an answer made of messages, framed by the shell', () => {
  it('as SSE events: each message the upstream bytes between `data: ` and a blank line, pieces joined', () => {
    const events = [
      piece(NOTE, true),
      piece(ANSWER.slice(0, 10), false),
      piece(ANSWER.slice(10), false),
      piece('', true),
    ];
    const answer = messagesAnswer(200, { 'mcp-session-id': 's' }, messages(events), false);
    expect(answer.headers).toMatchObject({ 'content-type': 'text/event-stream', 'mcp-session-id': 's' });
    for (const mode of ['enforce', 'observe'] as const) {
      expect(sseBytesOf(events, mode)).toBe(`data: ${NOTE}\n\ndata: ${ANSWER}\n\n`);
    }
  });

  it('a message cut by its source closes its SSE event, and what follows stands alone', () => {
    const lost = '{"jsonrpc":"2.0","id":1,"error":{"code":-32603,"message":"gone"}}';
    const events: MessageEvent[] = [
      piece('{"jsonrpc":"2.0","id":1,"res', false),
      { kind: 'cut', detail: 'exited' },
      piece(lost, true),
    ];
    for (const mode of ['enforce', 'observe'] as const) {
      expect(sseBytesOf(events, mode)).toBe(`data: {"jsonrpc":"2.0","id":1,"res\n\ndata: ${lost}\n\n`);
    }
  });

  it('as a JSON body: the content type is JSON and the relay reads the upstream events themselves', async () => {
    const body = messages([piece(ANSWER, true)]);
    const whole = messagesAnswer(200, {}, body, true);
    expect(whole.headers).toMatchObject({ 'content-type': 'application/json' });
    // A relay that lets its source go lets go of the upstream events.
    sourceOf(whole.body).destroy();
    await new Promise((resolve) => body.events.once('close', resolve));
    expect(body.events.destroyed).toBe(true);
  });

  it('goes as JSON only for one request whose first message is its answer, when the kind prefers it or the client takes no SSE', () => {
    const sse = { accept: 'application/json, text/event-stream' };
    const jsonOnly = { accept: 'application/json' };
    expect(answersAsJson(messages([], true, true), 1, sse)).toBe(true);
    expect(answersAsJson(messages([], true, false), 1, sse)).toBe(false);
    expect(answersAsJson(messages([], true, false), 1, jsonOnly)).toBe(true);
    expect(answersAsJson(messages([], false, true), 1, jsonOnly)).toBe(false);
    expect(answersAsJson(messages([], true, true), 2, jsonOnly)).toBe(false);
  });
});

describe('the session rules, from the facts an upstream reports', () => {
  const warnings: string[] = [];
  const log = { warn: (_fields: object, message: string) => warnings.push(message), error: () => {} };

  function exchange(over: Partial<UpstreamExchange> = {}): UpstreamExchange {
    return {
      tenant: 'acme',
      sessionId: undefined,
      enforced: true,
      requestIds: [7],
      initializes: false,
      routing: bodyRouting([]),
      meta: undefined,
      responseHoldBytes: null,
      crossing: () => ({ trustedPeer: false, drop: [], set: {} }),
      sent: () => {},
      ...over,
    };
  }

  function facts(room: ReturnType<UpstreamSessions['roomFor']> = undefined): UpstreamSessions {
    return {
      has: (sessionId, tenant) => sessionId === 'live' && tenant === 'acme',
      streaming: (sessionId) => sessionId === 'live',
      sharedWithoutSession: true,
      roomFor: () => room,
    };
  }

  it('answers 405 for GET and DELETE without a session, 404 for a session it does not hold for the tenant, 409 for a second GET stream', () => {
    expect(sessionRuleAnswer(facts(), 'GET', exchange(), log, 'stdio:x')).toMatchObject({
      status: 405,
      headers: { allow: 'POST' },
    });
    expect(sessionRuleAnswer(facts(), 'DELETE', exchange(), log, 'stdio:x')?.status).toBe(405);
    const unknown = sessionRuleAnswer(facts(), 'POST', exchange({ sessionId: 'gone' }), log, 'stdio:x');
    expect(unknown?.status).toBe(404);
    expect(unknown?.body).toContain('Session not found: gone');
    expect(
      sessionRuleAnswer(facts(), 'POST', exchange({ sessionId: 'live', tenant: 'other' }), log, 'stdio:x')
        ?.status,
    ).toBe(404);
    expect(sessionRuleAnswer(facts(), 'GET', exchange({ sessionId: 'live' }), log, 'stdio:x')?.status).toBe(
      409,
    );
    expect(
      sessionRuleAnswer(facts(), 'POST', exchange({ sessionId: 'live' }), log, 'stdio:x'),
    ).toBeUndefined();
  });

  it('answers 503 when the kind is closing or names a bound (counted as upstream_capacity), else lets the exchange through', () => {
    expect(sessionRuleAnswer(facts('closing'), 'POST', exchange(), log, 'stdio:x')).toMatchObject({
      status: 503,
      outcome: 'shutdown',
    });
    const bound = sessionRuleAnswer(
      facts({ key: 'maxProcessesPerTenant', limit: 2, setting: 'upstream.stdio.maxProcessesPerTenant' }),
      'POST',
      exchange(),
      log,
      'stdio:x',
    );
    expect(bound).toMatchObject({ status: 503, outcome: 'upstream_capacity' });
    expect(JSON.parse(bound?.body ?? '{}')).toMatchObject({
      id: 7,
      error: { data: { maxProcessesPerTenant: 2 } },
    });
    expect(warnings).toContain('stdio: no room for another MCP server process');
    expect(sessionRuleAnswer(facts(), 'POST', exchange(), log, 'stdio:x')).toBeUndefined();
  });

  it('refuses, where clients without a session share a process, an answer or a cancellation without a session', () => {
    const answering = exchange({
      routing: { progressTokens: new Set(), answersServer: true, cancelled: [] },
    });
    expect(sessionRuleAnswer(facts(), 'POST', answering, log, 'stdio:x')?.status).toBe(400);
    const cancelling = exchange({
      routing: { progressTokens: new Set(), answersServer: false, cancelled: ['n:1'] },
    });
    expect(sessionRuleAnswer(facts(), 'POST', cancelling, log, 'stdio:x')?.body).toContain(
      'notifications/cancelled',
    );
    expect(
      sessionRuleAnswer({ ...facts(), sharedWithoutSession: false }, 'POST', answering, log, 'stdio:x'),
    ).toBeUndefined();
  });
});
