// The shell's side of the upstream seam, without sockets: how an answer made of messages is framed for the
// client (message-framing.ts), and the session rules it answers from an upstream's facts (session-rules.ts).
import { PassThrough, type Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { bodyRouting } from '../../src/inspect/body-routing.js';
import { answersAsJson, framedAnswer } from '../../src/proxy/message-framing.js';
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

async function bytesOf(stream: Readable): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(Buffer.from(chunk as Uint8Array));
  return Buffer.concat(chunks).toString('utf8');
}

const ANSWER = '{"jsonrpc":"2.0","id":1,"result":{"a":1}}';
const NOTE = '{"jsonrpc":"2.0","method":"notifications/progress","params":{"progress":1}}';

describe('an answer made of messages, framed by the shell', () => {
  it('as SSE events: each message the upstream bytes between `data: ` and a blank line, pieces joined', async () => {
    const body = messages([
      piece(NOTE, true),
      piece(ANSWER.slice(0, 10), false),
      piece(ANSWER.slice(10), false),
      piece('', true),
    ]);
    const answer = framedAnswer(200, { 'mcp-session-id': 's' }, body, false);
    expect(answer.headers).toMatchObject({ 'content-type': 'text/event-stream', 'mcp-session-id': 's' });
    expect(await bytesOf(answer.stream)).toBe(`data: ${NOTE}\n\ndata: ${ANSWER}\n\n`);
  });

  it('a message cut by its source closes its SSE event, and what follows stands alone', async () => {
    const lost = '{"jsonrpc":"2.0","id":1,"error":{"code":-32603,"message":"gone"}}';
    const body = messages([
      piece('{"jsonrpc":"2.0","id":1,"res', false),
      { kind: 'cut', detail: 'exited' },
      piece(lost, true),
    ]);
    const answer = framedAnswer(200, {}, body, false);
    expect(await bytesOf(answer.stream)).toBe(`data: {"jsonrpc":"2.0","id":1,"res\n\ndata: ${lost}\n\n`);
  });

  it('as a JSON body: the one message, byte for byte; a cut breaks the body off with its detail', async () => {
    const whole = framedAnswer(200, {}, messages([piece(ANSWER, true)]), true);
    expect(whole.headers).toMatchObject({ 'content-type': 'application/json' });
    expect(await bytesOf(whole.stream)).toBe(ANSWER);

    const cut = framedAnswer(
      200,
      {},
      messages([piece('{"jsonrpc"', false), { kind: 'cut', detail: 'the server exited' }]),
      true,
    );
    await expect(bytesOf(cut.stream)).rejects.toThrow('the server exited');
  });

  it('a relay that lets the framed stream go lets go of the upstream events too', async () => {
    const events = new PassThrough({ objectMode: true });
    const answer = framedAnswer(
      200,
      {},
      { kind: 'messages', events, firstIsAnswer: true, preferJson: false },
      false,
    );
    answer.stream.destroy();
    await new Promise((resolve) => events.once('close', resolve));
    expect(events.destroyed).toBe(true);
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
      facts({ key: 'maxProcessesPerTenant', limit: 2 }),
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
