// Properties through the whole proxy, requests (issue 42, item 2): generated request bodies, with escapes and
// bytes no valid UTF-8 holds at the string scanner's window edges, duplicate and case-colliding keys inside
// `arguments` (opaque to the edge), deep nesting and any layout, single or batched, sent by a client whole,
// byte by byte, in random pieces or cut around every backslash through a real edge on 127.0.0.1 to a scripted
// upstream. The reference is the edge's documented contract read with JSON.parse over a strict UTF-8 decode
// (docs/reliability.md, "What the edge refuses"): a body that is not UTF-8 or not JSON is a 400 with -32700,
// one nested past request.maxJsonDepth a 400, one whose message is over its ceiling a 413; anything else
// reaches the upstream byte for byte, and every message judged is measured with its bytes as sent.
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ExpectedMeasure, expectMeasured, measured } from '../support/client-reading.js';
import { MCP_POST_HEADERS } from '../support/handles.js';
import { layoutJson } from '../support/json-samples.js';
import { type RawRequest, type RawUpstream, startRawUpstream } from '../support/raw-upstream.js';
import { startTestEdge, type TestEdge } from '../support/start-edge.js';
import {
  type Cutting,
  cut,
  cutting,
  type Damage,
  JSON_WHITESPACE,
  Layout,
  stringBody,
} from '../support/wire-samples.js';

/** The `capped` tool's request ceiling; everything else has the built-in 1 MiB. */
const CAPPED = 3000;
const DEFAULT_CEILING = 1024 * 1024;
const MAX_DEPTH = 1000;
const EDGE_YAML = `limits:\n  tools:\n    capped:\n      request: { maxMessageBytes: ${CAPPED} }\n`;

type Tool = 'capped' | 'free';

interface RequestShape {
  /** A call (with an id) or a notification. */
  call: boolean;
  tool: Tool;
  body: Buffer;
  /** Nesting of arrays inside `arguments` (0: none). */
  depth: number;
  /** Keys written twice, or in another letter case, inside `arguments`: its content is the server's business. */
  twins: boolean;
  seed: number;
  damage: Damage | null;
}

const requestShape: fc.Arbitrary<RequestShape> = fc.record({
  call: fc.boolean(),
  tool: fc.constantFrom<Tool>('capped', 'free'),
  body: stringBody(4000),
  depth: fc.oneof(
    { weight: 4, arbitrary: fc.constant(0) },
    { weight: 1, arbitrary: fc.integer({ min: 1, max: 1100 }) },
  ),
  twins: fc.boolean(),
  seed: fc.integer(),
  damage: fc.oneof(
    { weight: 8, arbitrary: fc.constant(null) },
    { weight: 1, arbitrary: fc.constantFrom<Damage>('truncated', 'control', 'bad-escape') },
  ),
});

const literal = (body: Buffer, damage: Damage | null): Buffer => {
  const tail =
    damage === 'control'
      ? Buffer.from([0x01])
      : damage === 'bad-escape'
        ? Buffer.from('\\x')
        : Buffer.alloc(0);
  return Buffer.concat([Buffer.from('"'), body, tail, Buffer.from('"')]);
};

/** A tools/call (or a notification) as `shape` says, with `id` written as its layout chooses. */
function requestBytes(shape: RequestShape, id: string | number): Buffer {
  const layout = new Layout(shape.seed, JSON_WHITESPACE);
  const args: [string, Buffer][] = [['text', literal(shape.body, shape.damage)]];
  if (shape.twins) args.unshift(['text', Buffer.from('"twin"')], ['TEXT', Buffer.from('"case"')]);
  if (shape.depth > 0) args.push(['v', Buffer.from(`${'['.repeat(shape.depth)}${']'.repeat(shape.depth)}`)]);
  const params = layout.object(
    layout.shuffled<[string, Buffer]>([
      ['name', Buffer.from(JSON.stringify(shape.tool))],
      ['arguments', layout.object(args)],
    ]),
  );
  const members: [string, Buffer][] = [
    ['jsonrpc', Buffer.from('"2.0"')],
    ['method', Buffer.from(shape.call ? '"tools/call"' : '"notifications/message"')],
    ['params', params],
  ];
  if (shape.call) members.push(['id', Buffer.from(layoutJson(id, shape.seed, { oddEscapes: true }))]);
  const message = layout.object(layout.shuffled(members));
  return shape.damage === 'truncated' ? message.subarray(0, message.length - 1) : message;
}

/** How deep objects and arrays nest in a JSON value (a scalar: 0). */
function depthOf(value: unknown): number {
  if (typeof value !== 'object' || value === null) return 0;
  let deepest = 0;
  for (const child of Object.values(value)) deepest = Math.max(deepest, depthOf(child));
  return deepest + 1;
}

const strictUtf8 = new TextDecoder('utf-8', { fatal: true });

/** JSON.parse over a strict UTF-8 decode (a byte order mark refused): what the edge promises to accept. */
function readStrictly(bytes: Uint8Array): { value: unknown } | undefined {
  if (bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf) return undefined;
  try {
    return { value: JSON.parse(strictUtf8.decode(bytes)) };
  } catch {
    return undefined;
  }
}

let upstream: RawUpstream;
let edge: TestEdge;

/** The upstream answers each call of a body with an empty result, a body of notifications with 202. */
function answer(req: RawRequest) {
  let parsed: unknown;
  try {
    parsed = JSON.parse(req.body.toString('utf8'));
  } catch {
    return { status: 400 };
  }
  const messages = (Array.isArray(parsed) ? parsed : [parsed]) as { id?: unknown }[];
  const results = messages.filter((m) => 'id' in m).map((m) => ({ jsonrpc: '2.0', id: m.id, result: {} }));
  if (results.length === 0) return { status: 202 };
  const body = JSON.stringify(Array.isArray(parsed) ? results : results[0]);
  return { status: 200, headers: { 'content-type': 'application/json' }, chunks: [body] };
}

beforeAll(async () => {
  upstream = await startRawUpstream(answer);
  edge = await startTestEdge(upstream.url, EDGE_YAML, { metrics: true });
});

afterAll(async () => {
  await edge?.stop();
  await upstream?.close();
});

/** Sends `body` cut as `how` says, a turn of the event loop between pieces; the status and the answer's bytes. */
async function send(body: Buffer, how: Cutting): Promise<{ status: number; answer: Buffer }> {
  const pieces = cut(body, how);
  const stream = new ReadableStream<Uint8Array>({
    async pull(controller) {
      const piece = pieces.shift();
      if (piece === undefined) controller.close();
      else controller.enqueue(piece);
      await new Promise((resolve) => setImmediate(resolve));
    },
  });
  const res = await fetch(edge.url, {
    method: 'POST',
    headers: MCP_POST_HEADERS,
    body: stream,
    duplex: 'half',
  } as RequestInit);
  return { status: res.status, answer: Buffer.from(await res.arrayBuffer()) };
}

describe('requests through a real edge, judged by its contract over JSON.parse (issue 42)', () => {
  it('a body reaches the upstream byte for byte, or is refused for the reason JSON.parse and the ceilings give; every message judged is measured', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(requestShape, { minLength: 1, maxLength: 3 }),
        fc.boolean(),
        fc.oneof({ weight: 9, arbitrary: fc.constant(false) }, { weight: 1, arbitrary: fc.constant(true) }),
        fc.integer(),
        cutting,
        async (shapes, asBatch, bom, seed, how) => {
          const batch = asBatch || shapes.length > 1;
          const layout = new Layout(seed, JSON_WHITESPACE);
          const messages = shapes.map((shape, i) => requestBytes(shape, i % 2 === 0 ? i + 1 : `r${i}"é`));
          const body = Buffer.concat([
            Buffer.from(bom ? '\uFEFF' : ''),
            layout.ws(),
            batch ? layout.array(messages) : messages[0]!,
            layout.ws(),
          ]);
          const received = upstream.received.length;
          const before = await measured(edge.metricsUrl!, 'request');
          const { status, answer: got } = await send(body, how);
          const after = await measured(edge.metricsUrl!, 'request');
          const reply = JSON.parse(got.toString('utf8') || 'null') as {
            error?: { code?: number; data?: { limit?: string } };
          };
          const expected: ExpectedMeasure = { messages: 0, minBytes: 0, maxBytes: 0, unparsable: 0 };
          const read = readStrictly(body);
          const refusedWith = (code: number, limit?: string): void => {
            expect(reply.error?.code).toBe(code);
            if (limit !== undefined) expect(reply.error?.data?.limit).toBe(limit);
            expect(upstream.received.length, 'nothing of a refused body reaches the upstream').toBe(received);
          };
          if (read === undefined) {
            expect(status).toBe(400);
            refusedWith(-32700);
          } else if (depthOf(read.value) > MAX_DEPTH) {
            expect(status).toBe(400);
            refusedWith(-32600, 'request.maxJsonDepth');
          } else {
            const bytes = messages.reduce((sum, m) => sum + m.length, 0);
            Object.assign(expected, { messages: messages.length, minBytes: bytes, maxBytes: bytes });
            const over = shapes.some(
              (shape, i) =>
                messages[i]!.length > (shape.call && shape.tool === 'capped' ? CAPPED : DEFAULT_CEILING),
            );
            if (over) {
              expect(status).toBe(413);
              refusedWith(-32600, 'request.maxMessageBytes');
            } else {
              expect(status).toBe(shapes.some((shape) => shape.call) ? 200 : 202);
              expect(upstream.received.length).toBe(received + 1);
              expect(
                upstream.received.at(-1)!.body.equals(body),
                'the upstream gets the bytes the client sent',
              ).toBe(true);
            }
          }
          expectMeasured(before, after, expected);
        },
      ),
      { numRuns: 150 },
    );
  });
});
