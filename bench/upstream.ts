// The benchmark's upstream: a minimal Streamable HTTP responder with canned JSON and SSE answers of chosen
// sizes, built once at start, so the upstream is never the bottleneck. The answer is picked by the
// x-bench-answer request header (the request body is read and dropped, not parsed).
// Run: node dist/bench/bench/upstream.js PORT   (listens on 127.0.0.1; SIGTERM stops it)
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';

const KiB = 1024;
const MiB = 1024 * KiB;
/** The 1 GiB body streamed against a 4 MiB ceiling. */
const HUGE_BYTES = 1024 * MiB;
const HUGE_CHUNK = 64 * KiB;
/** In the mix, every 20th answer (5%) is this large; the edge's ceiling for that tool is 64 KiB. */
const MIX_EVERY = 20;
const PROGRESS_EVENTS = 200;

/** JSON string content (already escaped) of exactly `bytes` bytes: prose with quotes and newlines, as tools write. */
function escapedProse(bytes: number): string {
  const sentence = JSON.stringify(
    'The quick "brown" fox jumps over the lazy dog, then files a report.\n',
  ).slice(1, -1);
  const whole = sentence.repeat(Math.floor(bytes / sentence.length));
  return whole + 'x'.repeat(bytes - whole.length);
}

const RESULT_HEAD = '{"result":{"content":[{"type":"text","text":"';
const RESULT_TAIL = '"}]},"jsonrpc":"2.0","id":1}';

/** A tools/call result for id 1, written as the MCP TypeScript SDK writes it (result first, id last), of exactly `bytes` bytes. */
function toolResult(bytes: number): Buffer {
  const text = escapedProse(bytes - RESULT_HEAD.length - RESULT_TAIL.length);
  return Buffer.from(RESULT_HEAD + text + RESULT_TAIL, 'utf8');
}

function sseEvent(message: Buffer | string): Buffer {
  return Buffer.concat([Buffer.from('event: message\ndata: '), Buffer.from(message), Buffer.from('\n\n')]);
}

function progressNotification(step: number): string {
  return JSON.stringify({
    method: 'notifications/progress',
    params: { progressToken: 1, progress: step, total: PROGRESS_EVENTS, message: `step ${step} of the job` },
    jsonrpc: '2.0',
  });
}

type Answer = (res: ServerResponse) => void;

function jsonAnswer(body: Buffer): Answer {
  return (res) => {
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': body.length });
    res.end(body);
  };
}

function sseAnswer(events: Buffer[]): Answer {
  return (res) => {
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    for (const event of events) res.write(event);
    res.end();
  };
}

/** A body of `total` bytes streamed with backpressure: head, filler, tail; stops when the reader goes away. */
function streamedAnswer(headers: Record<string, string | number>, head: string, tail: string): Answer {
  const filler = Buffer.from(escapedProse(HUGE_CHUNK));
  const fillerBytes = HUGE_BYTES - head.length - tail.length;
  return (res) => {
    res.writeHead(200, headers);
    res.write(head);
    let sent = 0;
    const pump = () => {
      while (sent < fillerBytes) {
        const size = Math.min(HUGE_CHUNK, fillerBytes - sent);
        sent += size;
        if (!res.write(size === HUGE_CHUNK ? filler : filler.subarray(0, size))) {
          res.once('drain', pump);
          return;
        }
      }
      res.end(tail);
    };
    res.once('close', () => {
      sent = fillerBytes;
      res.off('drain', pump);
    });
    pump();
  };
}

function buildAnswers(): Map<string, Answer> {
  const small = toolResult(KiB);
  const mixLarge = toolResult(128 * KiB);
  const progress = [
    ...Array.from({ length: PROGRESS_EVENTS }, (_, i) => sseEvent(progressNotification(i + 1))),
    sseEvent(small),
  ];
  let mixCount = 0;
  const mixSmall = jsonAnswer(small);
  const mixOversized = jsonAnswer(mixLarge);
  const hugeSseHead = `event: message\ndata: ${RESULT_HEAD}`;
  return new Map<string, Answer>([
    ['json-1k', jsonAnswer(small)],
    ['sse-1k', sseAnswer([sseEvent(small)])],
    ['json-1m', jsonAnswer(toolResult(MiB))],
    ['sse-1m', sseAnswer([sseEvent(toolResult(MiB))])],
    ['json-8m', jsonAnswer(toolResult(8 * MiB))],
    ['sse-8m', sseAnswer([sseEvent(toolResult(8 * MiB))])],
    ['progress', sseAnswer(progress)],
    [
      'mix',
      (res) => {
        mixCount++;
        (mixCount % MIX_EVERY === 0 ? mixOversized : mixSmall)(res);
      },
    ],
    [
      'huge-json',
      streamedAnswer(
        { 'content-type': 'application/json', 'content-length': HUGE_BYTES },
        RESULT_HEAD,
        RESULT_TAIL,
      ),
    ],
    [
      'huge-sse',
      streamedAnswer(
        { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' },
        hugeSseHead,
        `${RESULT_TAIL}\n\n`,
      ),
    ],
  ]);
}

function headerOf(req: IncomingMessage, name: string): string | undefined {
  const value = req.headers[name];
  return Array.isArray(value) ? value[0] : value;
}

function main(): void {
  const port = Number(process.argv[2] ?? 0);
  const answers = buildAnswers();
  const server = createServer({ keepAliveTimeout: 75_000, requestTimeout: 0 }, (req, res) => {
    if (req.method === 'GET') {
      // A standalone SSE stream: headers now, then nothing (an idle stream).
      res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
      res.flushHeaders();
      return;
    }
    req.resume();
    req.once('end', () => {
      if (req.method !== 'POST') {
        res.writeHead(200).end();
        return;
      }
      const answer = answers.get(headerOf(req, 'x-bench-answer') ?? 'json-1k');
      if (answer === undefined) {
        res.writeHead(400, { 'content-type': 'text/plain' }).end('unknown x-bench-answer');
        return;
      }
      answer(res);
    });
  });
  server.listen(port, '127.0.0.1', () => {
    const address = server.address();
    process.stdout.write(`listening ${typeof address === 'object' && address ? address.port : port}\n`);
  });
  process.once('SIGTERM', () => {
    server.closeAllConnections();
    server.close(() => process.exit(0));
  });
}

main();
