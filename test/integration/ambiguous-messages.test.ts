// Messages whose keys another JSON reader may read otherwise than the edge does (a repeated key, or one in
// another letter case, which Go's encoding/json matches): refused at the edge, so that what the edge judged
// is what runs. The upstream here reads JSON as Go does, and records everything that reaches it.
import { CallToolResultSchema, McpError } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectV1Client, connectV2Client, textOf } from '../support/clients.js';
import { goMember, type Members, parseKeepingKeys } from '../support/go-json.js';
import { MCP_POST_HEADERS, rejectionOf, trackHandles } from '../support/handles.js';
import {
  handshakeReply,
  jsonReply,
  type RawRequest,
  type RawUpstream,
  sseEvent,
  sseReply,
  startRawUpstream,
} from '../support/raw-upstream.js';
import { startV1Server } from '../support/sdk-v1-server.js';
import { startV2Server } from '../support/sdk-v2-server.js';
import { startTestEdge, type TestEdge } from '../support/start-edge.js';

const { track } = trackHandles();

const BIG_ANSWER = 100_000;
/** `big` may answer at most 10 KiB; `small` has no ceiling of its own. */
const LIMITS = 'limits: { tools: { big: { response: { maxMessageBytes: 10KiB } } } }';

/** What a Go server would run for one message: its method, id and tool as encoding/json decodes them. */
function goAnswer(message: unknown): unknown {
  const method = goMember(message as Members, 'method');
  const id = goMember(message as Members, 'id') ?? null;
  if (method === 'tools/list') return { jsonrpc: '2.0', id, result: { tools: [] } };
  const tool = goMember(goMember(message as Members, 'params'), 'name');
  const text = tool === 'big' ? 'b'.repeat(BIG_ANSWER) : `ran ${String(tool)}`;
  return { jsonrpc: '2.0', id, result: { content: [{ type: 'text', text }] } };
}

/** An upstream that reads requests as Go's encoding/json does (last duplicate wins, any letter case). */
function goUpstream(req: RawRequest) {
  const handshake = handshakeReply(req);
  if (handshake !== undefined) return handshake;
  const body = parseKeepingKeys(req.body.toString('utf8'));
  if (Array.isArray(body)) return jsonReply(body.map(goAnswer));
  return jsonReply(goAnswer(body));
}

interface Answer {
  status: number;
  json: {
    id?: unknown;
    result?: { content: { text: string }[] };
    error?: { code: number; message: string; data: Record<string, unknown> };
  };
  bytes: number;
}

async function post(url: string, body: string): Promise<Answer> {
  const res = await fetch(url, { method: 'POST', headers: MCP_POST_HEADERS, body });
  const text = await res.text();
  return { status: res.status, json: JSON.parse(text) as Answer['json'], bytes: text.length };
}

/** The calls that reached the upstream (the handshake and notifications aside). */
function callsReceived(upstream: RawUpstream): string[] {
  return upstream.received
    .filter((r) => r.method === 'POST' && !r.body.toString().includes('"initialize"'))
    .map((r) => r.body.toString());
}

describe('a request another reader may read otherwise is refused, and nothing reaches the upstream', () => {
  let upstream: RawUpstream;
  let edge: TestEdge;
  beforeAll(async () => {
    upstream = await startRawUpstream(goUpstream);
    edge = await startTestEdge(upstream.url, LIMITS);
  });
  afterAll(async () => {
    await edge.stop();
    await upstream.close();
  });

  const call = (params: string, envelope = '"jsonrpc":"2.0","id":1,"method":"tools/call"') =>
    `{${envelope},"params":{${params},"arguments":{}}}`;

  it('the same calls, unambiguous, reach the upstream: small answers, big is held to its ceiling', async () => {
    const before = callsReceived(upstream).length;
    const small = await post(edge.url, call('"name":"small"'));
    expect(small.status).toBe(200);
    expect(small.json.result?.content[0]?.text).toBe('ran small');
    const big = await post(edge.url, call('"name":"big"'));
    expect(big.status).toBe(200);
    expect(big.json.error?.data).toMatchObject({ reason: 'limit_exceeded', tool: 'big' });
    expect(callsReceived(upstream).length).toBe(before + 2);
  });

  it.each([
    ['"name" twice (small, then big)', call('"name":"small","name":"big"'), 1, 'name', 'params', undefined],
    [
      '"method" twice (tools/call, then tools/list)',
      call('"name":"small"', '"jsonrpc":"2.0","id":1,"method":"tools/call","method":"tools/list"'),
      1,
      'method',
      'message',
      undefined,
    ],
    [
      '"id" twice',
      call('"name":"small"', '"jsonrpc":"2.0","id":1,"id":2,"method":"tools/call"'),
      null,
      'id',
      'message',
      undefined,
    ],
    ['"name":"small" beside "NAME":"big"', call('"name":"small","NAME":"big"'), 1, 'name', 'params', 'NAME'],
    ['a lone "NAME"', call('"NAME":"big"'), 1, 'name', 'params', 'NAME'],
    [
      'a lone "Method"',
      call('"name":"small"', '"jsonrpc":"2.0","id":1,"Method":"tools/call"'),
      1,
      'method',
      'message',
      'Method',
    ],
    ['"name" and "n\\u0061me"', call('"name":"small","n\\u0061me":"big"'), 1, 'name', 'params', undefined],
    [
      '"ID" beside "id"',
      call('"name":"small"', '"jsonrpc":"2.0","id":1,"ID":2,"method":"tools/call"'),
      null,
      'id',
      'message',
      'ID',
    ],
    [
      'progressToken twice in _meta',
      call('"name":"small","_meta":{"progressToken":"a","progressToken":"b"}'),
      1,
      'progressToken',
      'params._meta',
      undefined,
    ],
  ])('%s: 400, -32600, nothing forwarded', async (_case, body, id, key, where, sentAs) => {
    const before = callsReceived(upstream).length;
    const answer = await post(edge.url, body);
    expect(answer.status).toBe(400);
    expect(answer.json.id).toBe(id);
    expect(answer.json.error?.code).toBe(-32600);
    expect(answer.json.error?.data).toEqual({
      reason: 'ambiguous_message',
      key,
      in: where,
      ...(sentAs === undefined ? { repeated: true } : { sentAs }),
      enforcedBy: 'mcp-edge',
    });
    const spelled = sentAs ?? key;
    expect(answer.json.error?.message).toContain(`has the key "${spelled}"`);
    expect(answer.json.error?.message).toContain('so mcp-edge refuses it');
    expect(callsReceived(upstream).length).toBe(before);
  });

  it('the message names the key and why: a repeated name, and a name in another letter case', async () => {
    const twice = await post(edge.url, call('"name":"small","name":"big"'));
    expect(twice.json.error?.message).toBe(
      'Request message has the key "name" in params twice; an upstream may read either, so mcp-edge refuses it',
    );
    const cased = await post(edge.url, call('"name":"small","NAME":"big"'));
    expect(cased.json.error?.message).toBe(
      'Request message has the key "NAME" in params, which differs from "name" only in letter case; an upstream may read it as "name", so mcp-edge refuses it',
    );
  });

  it('a batch with one ambiguous message is refused whole', async () => {
    const before = callsReceived(upstream).length;
    const batch = `[${call('"name":"small"')},${call('"name":"small","NAME":"big"').replace('"id":1', '"id":2')}]`;
    const answer = await post(edge.url, batch);
    expect(answer.status).toBe(400);
    expect(answer.json.id).toBe(2);
    expect(answer.json.error?.data).toMatchObject({ reason: 'ambiguous_message', key: 'name' });
    expect(callsReceived(upstream).length).toBe(before);
  });

  it('keys the edge does not read stay the upstream’s: repeated in arguments, or in _meta, forwarded byte for byte', async () => {
    for (const body of [
      '{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"small","arguments":{"name":"a","NAME":"b","name":"c"}}}',
      '{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"small","_meta":{"x":1,"x":2,"Name":3}}}',
    ]) {
      const answer = await post(edge.url, body);
      expect(answer.status).toBe(200);
      expect(callsReceived(upstream).at(-1)).toBe(body);
    }
  });
});

describe('an answer another reader may read otherwise is not delivered as sent', () => {
  it('an answer with "id" and "ID" (a JSON body): replaced by an error for the id the edge read', async () => {
    const big = `{"content":[{"type":"text","text":"${'b'.repeat(BIG_ANSWER)}"}]}`;
    const upstream = track(
      await startRawUpstream(
        (req) => handshakeReply(req) ?? jsonReply(`{"jsonrpc":"2.0","id":1,"result":${big},"ID":2}`),
      ),
    );
    const edge = track(await startTestEdge(upstream.url, LIMITS));
    const answer = await post(
      edge.url,
      '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"small"}}',
    );
    expect(answer.status).toBe(200);
    expect(answer.bytes).toBeLessThan(1000);
    expect(answer.json.id).toBe(1);
    expect(answer.json.error?.code).toBe(-32603);
    expect(answer.json.error?.data).toEqual({
      reason: 'ambiguous_message',
      key: 'id',
      in: 'message',
      sentAs: 'ID',
      enforcedBy: 'mcp-edge',
    });
  });

  it('in an SSE stream: the answer with "id" twice is replaced, a notification with "method" twice dropped with a notice', async () => {
    const upstream = track(
      await startRawUpstream(
        (req) =>
          handshakeReply(req) ??
          sseReply([
            sseEvent({
              data: '{"jsonrpc":"2.0","method":"notifications/message","method":"notifications/progress","params":{"level":"info","data":"x"}}',
            }),
            sseEvent({ data: '{"jsonrpc":"2.0","id":7,"id":1,"result":{"content":[]}}' }),
          ]),
      ),
    );
    const edge = track(await startTestEdge(upstream.url, LIMITS));
    const res = await fetch(edge.url, {
      method: 'POST',
      headers: MCP_POST_HEADERS,
      body: '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"small"}}',
    });
    const events = (await res.text())
      .split('\n')
      .filter((line) => line.startsWith('data: '))
      .map((line) => JSON.parse(line.slice(6)) as Record<string, unknown>);
    expect(events).toHaveLength(2);
    expect(events[0]).toMatchObject({
      method: 'notifications/message',
      params: { level: 'warning', logger: 'mcp-edge', data: { reason: 'ambiguous_message', key: 'method' } },
    });
    expect(events[1]).toMatchObject({
      id: 1,
      error: { code: -32603, data: { reason: 'ambiguous_message', key: 'id', repeated: true } },
    });
  });
});

describe('SDK clients are not refused: their messages are never ambiguous', () => {
  it('SDK v1 client through the edge to an SDK v1 server: list, call, call with progress', async () => {
    const server = track(await startV1Server({ mode: 'stateful' }));
    const edge = track(await startTestEdge(server.url, LIMITS));
    const { client } = track(await connectV1Client(edge.url));
    const tools = await client.listTools();
    expect(tools.tools.map((t) => t.name)).toContain('echo');
    const echoed = await client.callTool({ name: 'echo', arguments: { text: 'hello' } });
    expect(textOf(echoed)).toContain('hello');
    const progress: number[] = [];
    await client.callTool({ name: 'slow_progress', arguments: { steps: 2, delayMs: 10 } }, undefined, {
      onprogress: (p) => progress.push(p.progress),
    });
    expect(progress.length).toBeGreaterThan(0);
    expect(edge.logText()).not.toContain('ambiguous_message');
  });

  it('SDK v2 client through the edge to an SDK v2 server: list and call', async () => {
    const server = track(await startV2Server());
    const edge = track(await startTestEdge(server.url, LIMITS));
    const { client } = track(await connectV2Client(edge.url));
    const tools = await client.listTools();
    expect(tools.tools.map((t) => t.name)).toContain('echo');
    const echoed = await client.callTool({ name: 'echo', arguments: { text: 'hello' } });
    expect(textOf(echoed)).toContain('hello');
    expect(edge.logText()).not.toContain('ambiguous_message');
  });

  it('an SDK v1 client gets the refusal as an error it can read, and its session goes on', async () => {
    const server = track(await startV1Server({ mode: 'stateful' }));
    const edge = track(await startTestEdge(server.url, LIMITS));
    const { client } = track(await connectV1Client(edge.url));
    // A tool named in another letter case than its key is spelled cannot come from an SDK; sent by hand here.
    const err = await rejectionOf(
      client.request({ method: 'tools/call', params: { NAME: 'echo' } }, CallToolResultSchema),
    );
    expect(err).not.toBeInstanceOf(McpError);
    expect(String(err)).toContain('ambiguous_message');
    const echoed = await client.callTool({ name: 'echo', arguments: { text: 'still here' } });
    expect(textOf(echoed)).toContain('still here');
  });
});
