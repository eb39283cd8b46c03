// Properties through the whole proxy, answers (issue 42, item 2): generated answers, with escapes and bytes no
// valid UTF-8 holds at the string scanner's window edges, decoy duplicate keys, deep nesting and any layout, sent by
// a scripted upstream as a JSON body or as SSE events, whole, byte by byte, in random pieces or cut around every
// backslash, through a real edge on 127.0.0.1 to a client. The reference is the client: what fetch's json() or
// eventsource-parser reads from the upstream's bytes (a lossy UTF-8 decode, then JSON.parse). For every case the
// client gets the upstream's bytes unchanged unless an answer is over its tool's ceiling, that answer is replaced
// by the edge's error for its id, an answer with a key written twice (a decoy) is replaced by the edge's error for
// its id as ambiguous (issue 40, item 6), and the metrics count every message a client can read with its bytes as
// sent.
import type { EventSourceMessage } from 'eventsource-parser';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type ExpectedMeasure,
  expectAmbiguousError,
  expectLimitError,
  expectLimitOrAmbiguousError,
  expectMeasured,
  measured,
  readJsonAsClient,
  readSseAsClient,
} from '../support/client-reading.js';
import { MCP_POST_HEADERS } from '../support/handles.js';
import { type RawReply, type RawUpstream, startRawUpstream } from '../support/raw-upstream.js';
import { startTestEdge, type TestEdge } from '../support/start-edge.js';
import {
  type AnswerShape,
  answerBytes,
  answerShape,
  type Cutting,
  cut,
  cutting,
  JSON_WHITESPACE,
  Layout,
  notificationBytes,
  SSE_DATA_WHITESPACE,
  sseEventBytes,
  stringBody,
} from '../support/wire-samples.js';

/** The `capped` tool's response ceiling; `free` has the built-in 4 MiB. */
const CAPPED = 3000;
const DEFAULT_CEILING = 4 * 1024 * 1024;
const EDGE_YAML = `limits:\n  tools:\n    capped:\n      response: { maxMessageBytes: ${CAPPED} }\n`;

type Tool = 'capped' | 'free';
const ceilingOf = (tool: Tool): number => (tool === 'capped' ? CAPPED : DEFAULT_CEILING);

interface Call {
  id: string | number;
  tool: Tool;
}

let upstream: RawUpstream;
let edge: TestEdge;
/** What the upstream answers the next call with. */
let reply: RawReply = { status: 500 };

beforeAll(async () => {
  upstream = await startRawUpstream(() => reply);
  edge = await startTestEdge(upstream.url, EDGE_YAML, { metrics: true });
});

afterAll(async () => {
  await edge?.stop();
  await upstream?.close();
});

/** One to three calls; ids a client may choose (strings that need escaping among them), distinct. */
const calls: fc.Arbitrary<Call[]> = fc
  .array(
    fc.record({
      tool: fc.constantFrom<Tool>('capped', 'free'),
      name: fc.option(fc.constantFrom('"', '\\', 'é', '😀', '\u2028', 'x'), { nil: undefined }),
    }),
    { minLength: 1, maxLength: 3 },
  )
  .map((drawn) =>
    drawn.map(({ tool, name }, i) => ({ tool, id: name === undefined ? i + 7 : `c${i}${name}` })),
  );

function requestBody(batch: boolean, made: Call[]): string {
  const messages = made.map(({ id, tool }) => ({
    jsonrpc: '2.0',
    id,
    method: 'tools/call',
    params: { name: tool, arguments: {} },
  }));
  return JSON.stringify(batch ? messages : messages[0]);
}

/** Sends the calls through the edge, the upstream answering with `body` cut as `how` says; the client's bytes. */
async function exchange(
  made: Call[],
  batch: boolean,
  contentType: string,
  body: Buffer,
  how: Cutting,
): Promise<Buffer> {
  reply = { status: 200, headers: { 'content-type': contentType }, chunks: cut(body, how), paced: true };
  const res = await fetch(edge.url, {
    method: 'POST',
    headers: MCP_POST_HEADERS,
    body: requestBody(batch, made),
  });
  expect(res.status).toBe(200);
  return Buffer.from(await res.arrayBuffer());
}

/** The answer's bytes as measured: exactly when held whole, else a lower bound past the hold bound. */
function measureOf(bytes: number, hold: number, expected: ExpectedMeasure): void {
  expected.messages++;
  expected.minBytes += bytes > hold ? hold + 1 : bytes;
  expected.maxBytes += bytes;
}

describe('answers through a real edge, judged as a client reads them (issue 42)', () => {
  it('a JSON body: forwarded byte for byte, or each answer over its ceiling replaced; every readable message measured', async () => {
    await fc.assert(
      fc.asyncProperty(
        calls,
        fc.array(answerShape(4000), { minLength: 3, maxLength: 3 }),
        fc.boolean(),
        fc.boolean(),
        fc.integer(),
        cutting,
        async (made, shapes, asBatch, bom, seed, how) => {
          const batch = asBatch || made.length > 1;
          const layout = new Layout(seed, JSON_WHITESPACE);
          const order = layout.shuffled(made.map((_, i) => i));
          const answers = order.map((i) => answerBytes(shapes[i]!, made[i]!.id, JSON_WHITESPACE));
          const body = Buffer.concat([
            Buffer.from(bom ? '\uFEFF' : ''),
            layout.ws(),
            batch ? layout.array(answers) : answers[0]!,
            layout.ws(),
          ]);
          const hold = made.reduce((sum, call) => sum + ceilingOf(call.tool), 0);
          const before = await measured(edge.metricsUrl!, 'response');
          const got = await exchange(made, batch, 'application/json', body, how);
          const after = await measured(edge.metricsUrl!, 'response');
          const expected: ExpectedMeasure = { messages: 0, minBytes: 0, maxBytes: 0, unparsable: 0 };
          const read = readJsonAsClient(body);
          if (body.length > hold) {
            // More than the edge holds for these answers: every call gets the edge's error, measured past the bound.
            const errors = readJsonAsClient(got)?.value;
            const list = made.length === 1 ? [errors] : (errors as unknown[]);
            expect(list).toHaveLength(made.length);
            made.forEach((call, i) => {
              expect(list[i]).toMatchObject({
                id: call.id,
                error: { data: { limit: 'response.maxMessageBytes' } },
              });
              measureOf(body.length, hold, expected);
            });
          } else if (read === undefined) {
            expect(got.equals(body), 'a body no client can read goes on as it came').toBe(true);
            expected.unparsable = 1;
          } else {
            const replaced = order.map((i, k) => answers[k]!.length > ceilingOf(made[i]!.tool));
            // Held whole (the body is within the hold bound), an answer with a decoy is ambiguous first.
            const ambiguous = order.map((i) => shapes[i]!.decoys.length > 0);
            for (const message of answers) measureOf(message.length, hold, expected);
            if (!replaced.includes(true) && !ambiguous.includes(true)) {
              expect(got.equals(body), 'answers within their ceilings go on byte for byte').toBe(true);
            } else {
              const values = batch ? (read.value as unknown[]) : [read.value];
              const gotValue = JSON.parse(got.toString('utf8')) as unknown;
              const gotValues = batch ? (gotValue as unknown[]) : [gotValue];
              expect(gotValues).toHaveLength(values.length);
              order.forEach((i, k) => {
                if (ambiguous[k]) expectAmbiguousError(gotValues[k], made[i]!.id);
                else if (replaced[k]) expectLimitError(gotValues[k], made[i]!.id, made[i]!.tool);
                else expect(gotValues[k]).toEqual(values[k]);
              });
            }
          }
          expectMeasured(before, after, expected);
        },
      ),
      { numRuns: 150 },
    );
  });

  it('SSE events: each forwarded byte for byte, or replaced when over its ceiling; every readable message measured', async () => {
    await fc.assert(
      fc.asyncProperty(
        calls,
        fc.array(answerShape(4000), { minLength: 3, maxLength: 3 }),
        fc.array(stringBody(5000), { maxLength: 2 }),
        fc.record({
          eventIds: fc.boolean(),
          priming: fc.boolean(),
          typed: fc.boolean(),
          eol: fc.constantFrom('\n', '\r\n', '\r'),
          seed: fc.integer(),
        }),
        cutting,
        async (made, shapes, notes, framing, how) => {
          const { eol, seed } = framing;
          const layout = new Layout(seed, SSE_DATA_WHITESPACE);
          const order = layout.shuffled(made.map((_, i) => i));
          const hold = made.reduce((sum, call) => sum + ceilingOf(call.tool), 0);
          const expected: ExpectedMeasure = { messages: 0, minBytes: 0, maxBytes: 0, unparsable: 0 };
          /** What the client must read, event by event. */
          const checks: ((event: EventSourceMessage | undefined) => void)[] = [];
          const stream: Buffer[] = [];
          let eventNumber = 0;
          const nextId = (): string | undefined => (framing.eventIds ? `e${eventNumber++}` : undefined);
          if (framing.priming) stream.push(Buffer.from(`id: p${eol}data:${eol}${eol}`));
          const unanswered: Call[] = [];
          let changed = false;
          const pushNotification = (body: Buffer): void => {
            const data = notificationBytes(body, seed, SSE_DATA_WHITESPACE);
            const id = nextId();
            stream.push(sseEventBytes(data, eol, id, framing.typed), Buffer.from(`: ping${eol}${eol}`));
            measureOf(data.length, hold, expected);
            const text = new TextDecoder().decode(data);
            checks.push((event) => expect(event).toMatchObject({ data: text, id }));
          };
          order.forEach((i, k) => {
            const note = notes[k];
            if (note !== undefined) pushNotification(note);
            const call = made[i]!;
            // A damaged answer is kept within the hold bound: past it the edge answers before it can tell.
            const shape: AnswerShape =
              shapes[i]!.damage === null
                ? shapes[i]!
                : { ...shapes[i]!, body: shapes[i]!.body.subarray(0, 1000), depth: 0 };
            const data = answerBytes(shape, call.id, SSE_DATA_WHITESPACE);
            const id = nextId();
            stream.push(sseEventBytes(data, eol, id, framing.typed));
            const text = new TextDecoder().decode(data);
            if (readJsonAsClient(data) === undefined) {
              expected.unparsable++;
              unanswered.push(call);
              checks.push((event) => expect(event).toMatchObject({ data: text, id }));
              return;
            }
            measureOf(data.length, hold, expected);
            const over = data.length > ceilingOf(call.tool);
            const ambiguous = shape.decoys.length > 0;
            if (over || ambiguous) {
              changed = true;
              checks.push((event) => {
                expect(event?.id).toBe(id);
                const value: unknown = JSON.parse(event?.data ?? 'null');
                if (!ambiguous) expectLimitError(value, call.id, call.tool);
                else if (!over) expectAmbiguousError(value, call.id);
                else expectLimitOrAmbiguousError(value, call.id, call.tool);
              });
            } else {
              checks.push((event) => expect(event).toMatchObject({ data: text, id }));
            }
          });
          // A stream that ends with calls unanswered and no event to resume from: the edge answers them.
          const resumable = framing.eventIds || framing.priming;
          if (!resumable) {
            for (const call of made.filter((c) => unanswered.includes(c))) {
              changed = true;
              checks.push((event) =>
                expect(JSON.parse(event?.data ?? 'null')).toMatchObject({ id: call.id, error: {} }),
              );
            }
          }
          const body = Buffer.concat(stream);
          const before = await measured(edge.metricsUrl!, 'response');
          const got = await exchange(made, made.length > 1, 'text/event-stream', body, how);
          const after = await measured(edge.metricsUrl!, 'response');
          const events = readSseAsClient(got);
          expect(events).toHaveLength(checks.length);
          for (const [k, check] of checks.entries()) check(events[k]);
          if (!changed)
            expect(got.equals(body), 'a stream the edge changes nothing of goes on byte for byte').toBe(true);
          expectMeasured(before, after, expected);
        },
      ),
      { numRuns: 150 },
    );
  });
});

describe('what these properties found, each a case of its own (issue 42)', () => {
  const answer = (id: number, text: Buffer): Buffer =>
    Buffer.concat([
      Buffer.from(`{"jsonrpc":"2.0","id":${id},"result":{"content":[{"type":"text","text":"`),
      text,
      Buffer.from('"}]}}'),
    ]);
  const calls: Call[] = [
    { id: 1, tool: 'capped' },
    { id: 2, tool: 'free' },
  ];

  it('a JSON batch whose answer over its ceiling holds a byte no valid UTF-8 holds: that answer is replaced, both are measured', async () => {
    // Clients decode the 0xff as U+FFFD and read on; the edge counted the body unparsable and forwarded it whole.
    const over = answer(1, Buffer.concat([Buffer.from('a'.repeat(3500)), Buffer.from([0xff])]));
    const within = answer(2, Buffer.from('small'));
    const body = Buffer.concat([Buffer.from('['), over, Buffer.from(','), within, Buffer.from(']')]);
    const before = await measured(edge.metricsUrl!, 'response');
    const got = await exchange(calls, true, 'application/json', body, { kind: 'whole' });
    const after = await measured(edge.metricsUrl!, 'response');
    const [first, second] = JSON.parse(got.toString('utf8')) as unknown[];
    expectLimitError(first, 1, 'capped');
    expect(second).toEqual(readJsonAsClient(within)?.value);
    expectMeasured(before, after, {
      messages: 2,
      minBytes: over.length + within.length,
      maxBytes: over.length + within.length,
      unparsable: 0,
    });
  });

  it('a JSON body that starts with a byte order mark is measured as the message it holds', async () => {
    const message = answer(1, Buffer.from('with a BOM'));
    const body = Buffer.concat([Buffer.from('\uFEFF'), message]);
    const before = await measured(edge.metricsUrl!, 'response');
    const got = await exchange([calls[0]!], false, 'application/json', body, { kind: 'whole' });
    const after = await measured(edge.metricsUrl!, 'response');
    expect(got.equals(body)).toBe(true);
    expectMeasured(before, after, {
      messages: 1,
      minBytes: message.length,
      maxBytes: message.length,
      unparsable: 0,
    });
  });

  it("a notification larger than its call's ceiling on the call's stream reaches the client, as it would on any other stream", async () => {
    const note = Buffer.from(
      `{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"${'n'.repeat(5000)}"}}`,
    );
    const result = answer(1, Buffer.from('done'));
    const body = Buffer.concat([
      sseEventBytes(note, '\n', undefined, false),
      sseEventBytes(result, '\n', undefined, false),
    ]);
    const before = await measured(edge.metricsUrl!, 'response');
    const got = await exchange([calls[0]!], false, 'text/event-stream', body, { kind: 'whole' });
    const after = await measured(edge.metricsUrl!, 'response');
    // Was: the notification dropped, counted unparsable ("SSE event framing larger than the edge holds").
    expect(got.equals(body)).toBe(true);
    expectMeasured(before, after, {
      messages: 2,
      minBytes: note.length + result.length,
      maxBytes: note.length + result.length,
      unparsable: 0,
    });
  });

  it('an SSE answer over its ceiling that names a decoy id before its own is replaced for its own id', async () => {
    // JSON.parse keeps the last `id`; the edge answered early for the first ("decoy"), then let the event go. Read
    // whole, the event is ambiguous (its id and result written twice): replaced as such, for the id it answers.
    const text = 'a'.repeat(3500);
    const data = Buffer.from(
      `{"id":"decoy","result":{"decoy":true},"jsonrpc":"2.0","result":{"content":[{"type":"text","text":"${text}"}]},"id":1}`,
    );
    const got = await exchange(
      [calls[0]!],
      false,
      'text/event-stream',
      sseEventBytes(data, '\n', undefined, false),
      {
        kind: 'whole',
      },
    );
    const events = readSseAsClient(got);
    expect(events).toHaveLength(1);
    // Was: error -32603 with reason upstream_failed (the answer lost, the stream ended without it).
    expectAmbiguousError(JSON.parse(events[0]!.data), 1);
  });
});
