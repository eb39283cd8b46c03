// An MCP server stand-in for the model of the exchange (issue 42, item 1), scripted by the test over loopback:
// it issues sessions, holds every call until the test answers it, in any order, on the channel the call was
// given (a JSON body, or an SSE stream with or without event ids), keeps each stream's events to replay them to
// a client that resumes with Last-Event-ID, serves GET streams for its notifications, and cuts a stream when
// told. What it sends is recorded, so the test can hold the edge's measurements to it.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { closeHttpServer, listenOn } from '../../src/demo/server.js';
import { readBody } from './fetch-to-node.js';
import { sseEventBytes } from './wire-samples.js';

export interface Channel {
  kind: 'json' | 'sse';
  eventIds: boolean;
}

/** The calls of one POST and where their answers go. */
export interface CallStream {
  key: string;
  session: string;
  channel: Channel;
  batch: boolean;
  ids: string[];
  /** Calls not answered yet (a cancelled one stays until its stream ends). */
  waiting: Set<string>;
  /** JSON: the answers collected until the last one; SSE: every event sent, for replays. */
  answers: Buffer[];
  events: { id: string | undefined; frame: Buffer }[];
  /** Where its events go now: the POST's response, a resumed GET, or nowhere (cut, not resumed yet). */
  res: ServerResponse | undefined;
}

interface SessionAtServer {
  streams: CallStream[];
  gets: Set<ServerResponse>;
  cancelled: Set<string>;
}

const SSE_HEADERS = { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' };

export class ExchangeStandIn {
  readonly sessions = new Map<string, SessionAtServer>();
  /** The channel the next POST of calls is answered on. */
  next: Channel = { kind: 'json', eventIds: false };
  #sessionCount = 0;
  #eventCount = 0;

  constructor(
    readonly url: string,
    private readonly stop: () => Promise<void>,
  ) {}

  static async start(): Promise<ExchangeStandIn> {
    let standIn: ExchangeStandIn | undefined;
    const { server, url } = await listenOn((req, res) => standIn!.handle(req, res), { anyPath: true });
    standIn = new ExchangeStandIn(url, () => closeHttpServer(server));
    return standIn;
  }

  close(): Promise<void> {
    for (const session of this.sessions.values()) this.#endSession(session);
    return this.stop();
  }

  stream(id: string): CallStream | undefined {
    for (const session of this.sessions.values())
      for (const stream of session.streams) if (stream.ids.includes(id)) return stream;
    return undefined;
  }

  /** Answers call `id` with `message` on its stream (held, for a JSON body, until its POST's last call). */
  answer(id: string, message: Buffer): void {
    const stream = this.stream(id);
    if (stream === undefined) throw new Error(`no call ${id} at the stand-in`);
    stream.waiting.delete(id);
    if (stream.channel.kind === 'json') {
      stream.answers.push(message);
      if (stream.waiting.size > 0) return;
      const body = stream.batch
        ? Buffer.concat([Buffer.from('['), ...join(stream.answers), Buffer.from(']')])
        : message;
      stream.res?.writeHead(200, { 'content-type': 'application/json' }).end(body);
      return;
    }
    this.send(stream, message);
    if (stream.waiting.size === 0) stream.res?.end();
  }

  /** An event on a call's stream (an answer, a notification, bytes that are not JSON), kept for replays. */
  send(stream: CallStream, data: Buffer): void {
    const id = stream.channel.eventIds ? String(++this.#eventCount) : undefined;
    const frame = sseEventBytes(data, '\n', id, false);
    stream.events.push({ id, frame });
    stream.res?.write(frame);
  }

  /** GET streams of the session open here (not resumptions). */
  getsOf(session: string): number {
    return this.sessions.get(session)?.gets.size ?? 0;
  }

  /** A notification on the session's first GET stream; false when it has none open. */
  notifyOnGet(session: string, data: Buffer): boolean {
    const [get] = this.sessions.get(session)?.gets ?? [];
    if (get === undefined) return false;
    get.write(sseEventBytes(data, '\n', undefined, false));
    return true;
  }

  /** Cuts the connection of a call's SSE stream (what it sends next waits for a resumption). */
  cut(stream: CallStream): void {
    stream.res?.destroy();
    stream.res = undefined;
  }

  /** Ends every stream of the session: what still waits there is never answered. */
  endAll(session: string): void {
    const at = this.sessions.get(session);
    if (at !== undefined) this.#endSession(at);
  }

  /** Ends a call's stream: what still waits there (a cancelled call) is never answered. */
  finish(stream: CallStream): void {
    stream.waiting.clear();
    const res = stream.res;
    if (res === undefined || res.writableEnded) return;
    if (!res.headersSent) res.writeHead(200, { 'content-type': 'application/json' });
    res.end();
  }

  #endSession(session: SessionAtServer): void {
    for (const stream of session.streams) this.finish(stream);
    for (const get of session.gets) get.end();
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const body = await readBody(req);
    const sessionId = req.headers['mcp-session-id'];
    const session = typeof sessionId === 'string' ? this.sessions.get(sessionId) : undefined;
    if (req.method === 'DELETE') {
      if (session !== undefined) this.#endSession(session);
      this.sessions.delete(String(sessionId));
      res.writeHead(200).end();
      return;
    }
    if (req.method === 'GET') {
      if (session === undefined) return void res.writeHead(404).end();
      res.writeHead(200, SSE_HEADERS);
      res.flushHeaders();
      const last = req.headers['last-event-id'];
      if (typeof last === 'string') return this.#resume(session, last, res);
      session.gets.add(res);
      res.once('close', () => session.gets.delete(res));
      return;
    }
    const parsed = JSON.parse(body.toString('utf8')) as unknown;
    const messages = (Array.isArray(parsed) ? parsed : [parsed]) as {
      id?: string;
      method?: string;
      params?: { requestId?: string };
    }[];
    if (messages[0]?.method === 'initialize') {
      const issued = `S${++this.#sessionCount}`;
      this.sessions.set(issued, { streams: [], gets: new Set(), cancelled: new Set() });
      const result = {
        protocolVersion: '2025-11-25',
        capabilities: { tools: {} },
        serverInfo: { name: 'stand-in' },
      };
      res.writeHead(200, { 'content-type': 'application/json', 'mcp-session-id': issued });
      res.end(JSON.stringify({ jsonrpc: '2.0', id: messages[0].id, result }));
      return;
    }
    if (session === undefined) return void res.writeHead(404).end();
    const calls = messages.filter((m) => m.id !== undefined && m.method !== undefined);
    for (const m of messages)
      if (m.method === 'notifications/cancelled' && m.params?.requestId !== undefined)
        session.cancelled.add(m.params.requestId);
    if (calls.length === 0) return void res.writeHead(202).end();
    const stream: CallStream = {
      key: String(calls[0]!.id),
      session: String(sessionId),
      channel: this.next,
      batch: Array.isArray(parsed),
      ids: calls.map((m) => String(m.id)),
      waiting: new Set(calls.map((m) => String(m.id))),
      answers: [],
      events: [],
      res,
    };
    session.streams.push(stream);
    res.once('close', () => {
      if (stream.res === res) stream.res = undefined;
    });
    if (stream.channel.kind === 'sse') {
      res.writeHead(200, SSE_HEADERS);
      res.flushHeaders();
      // A resumable stream opens with a priming event (an id, empty data), as 2025-11-25 servers send it.
      if (stream.channel.eventIds) this.send(stream, Buffer.alloc(0));
    }
  }

  #resume(session: SessionAtServer, last: string, res: ServerResponse): void {
    const stream = session.streams.find((s) => s.events.some((e) => e.id === last));
    if (stream === undefined) return void res.end();
    stream.res?.destroy();
    stream.res = res;
    res.once('close', () => {
      if (stream.res === res) stream.res = undefined;
    });
    const from = stream.events.findIndex((e) => e.id === last) + 1;
    for (const event of stream.events.slice(from)) res.write(event.frame);
    if (stream.waiting.size === 0) res.end();
  }
}

function join(parts: Buffer[]): Buffer[] {
  return parts.flatMap((part, i) => (i === 0 ? [part] : [Buffer.from(','), part]));
}
