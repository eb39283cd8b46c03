// The model of the exchange (issue 42, item 1): what clients, sessions, calls and streams exist and what each
// call's answer must become, for fast-check's model-based commands (test/reliability/exchange-model.test.ts).
// The real system is a real edge on 127.0.0.1 between raw clients (exchange-client.ts) and a scripted upstream
// (exchange-stand-in.ts). After every command the invariants below are checked against what the clients read
// and what the edge judged and keeps.
import { expect } from 'vitest';
import type { JudgedMessage } from '../../src/inspect/message-verdict.js';
import { DEFAULT_ANSWERED_LIMITS } from '../../src/inspect/session-store.js';
import type { ClientSession, ClientStream } from './exchange-client.js';
import { until } from './exchange-client.js';
import type { Channel, ExchangeStandIn } from './exchange-stand-in.js';
import type { TestEdge } from './start-edge.js';

/** `capped` answers have this response ceiling; `free` ones the built-in 4 MiB. */
export const CAPPED = 2000;
export const MAX_GET_STREAMS = 2;
export const MODEL_EDGE_YAML = `limits:
  tools:
    capped:
      response: { maxMessageBytes: ${CAPPED} }
server:
  maxGetStreamsPerSession: ${MAX_GET_STREAMS}
`;

export type Tool = 'capped' | 'free';
export const ceilingOf = (tool: Tool): number => (tool === 'capped' ? CAPPED : 4 * 1024 * 1024);

export interface ModelCall {
  id: string;
  session: number;
  tool: Tool;
  stream: string;
  /**
   * answered: by the upstream or the edge, delivered; stored: answered by the upstream on a cut stream, delivered
   * when the client resumes it; junk: answered by a JSON body no client can read.
   */
  state: 'waiting' | 'stored' | 'answered' | 'junk' | 'cancelled';
}

export interface ModelStream {
  key: string;
  session: number;
  channel: Channel;
  calls: string[];
  /** Its connection was cut and no resumption has taken it up yet. */
  cut: boolean;
  /** It now goes to the client on a GET that resumed it (one of the session's GET streams). */
  resumed: boolean;
  /** Every call answered: the upstream ended it. */
  done: boolean;
}

export interface Model {
  sessions: { tag: string; gets: number; notes: number }[];
  calls: Map<string, ModelCall>;
  streams: ModelStream[];
  count: number;
}

export interface Real {
  edge: TestEdge;
  standIn: ExchangeStandIn;
  clients: ClientSession[];
  /** The client's stream that reads each call stream now (the POST, or the GET that resumed it). */
  reading: Map<string, ClientStream>;
  /** What the edge judged, with the session of the exchange it judged it in. */
  judged: { sessionId: string | undefined; message: JudgedMessage }[];
  /** The bytes the upstream answered each call with. */
  sent: Map<string, Buffer>;
}

export const waitingCalls = (model: Model): ModelCall[] =>
  [...model.calls.values()].filter((call) => call.state === 'waiting');

export const streamOf = (model: Model, call: ModelCall): ModelStream =>
  model.streams.find((stream) => stream.key === call.stream)!;

/** The stream delivers to a client now (an SSE stream neither cut nor done). */
export const live = (stream: ModelStream): boolean => !stream.cut && !stream.done;

/** GET streams the session holds open at the edge: its own, and the resumptions still delivering. */
export const getsOpen = (model: Model, session: number): number =>
  model.sessions[session]!.gets +
  model.streams.filter((s) => s.session === session && s.resumed && !s.done).length;

/** The messages with this id the session's client read, on any of its streams. */
export function answersTo(real: Real, call: ModelCall): unknown[] {
  return real.clients[call.session]!.messages().filter((m) => (m as { id?: unknown }).id === call.id);
}

/** What the upstream answers a call with: its id and session in the text, padded to its size. */
export function answerBytes(call: ModelCall, tag: string, big: boolean): Buffer {
  const text = `for ${call.id} of ${tag}${big ? ' BIG ' : ' '}`;
  const pad = Math.max(0, (big ? 3000 : 120) - text.length);
  return Buffer.from(
    JSON.stringify({
      jsonrpc: '2.0',
      id: call.id,
      result: { content: [{ type: 'text', text: text + 'x'.repeat(pad) }] },
    }),
  );
}

export function noteBytes(tag: string, big: boolean): Buffer {
  const data = `note of ${tag} ${'n'.repeat(big ? 3000 : 40)}`;
  return Buffer.from(
    JSON.stringify({ jsonrpc: '2.0', method: 'notifications/message', params: { level: 'info', data } }),
  );
}

/** Every call of the stream that was answered has its answer at the client (the stream delivers them now). */
export async function delivered(model: Model, real: Real, stream: ModelStream): Promise<void> {
  const due = stream.calls
    .map((id) => model.calls.get(id)!)
    .filter((c) => c.state === 'answered' || c.state === 'stored');
  await until(
    () => due.every((call) => answersTo(real, call).length >= 1),
    () => `answers to ${due.map((c) => c.id).join(', ')} at the client`,
  );
  for (const call of due) call.state = 'answered';
}

/** The invariants, after every command. */
export async function checkInvariants(model: Model, real: Real): Promise<void> {
  real.clients.forEach((client, session) => {
    for (const message of client.messages()) {
      const { id, result, method, params } = message as {
        id?: string;
        result?: { content?: { text?: string }[] };
        method?: string;
        params?: { data?: string };
      };
      if (id !== undefined) {
        const call = model.calls.get(id);
        // No answer reaches another client or session.
        expect(call?.session, `the answer to ${id} reached session ${client.tag}`).toBe(session);
        // No oversized answer is delivered, on any path.
        if (result !== undefined && result.content?.[0]?.text?.includes(' BIG ') === true)
          expect(call?.tool, `an answer over the ${CAPPED}-byte ceiling of ${id} was delivered`).toBe('free');
      } else if (method === 'notifications/message') {
        expect(params?.data?.startsWith(`note of ${client.tag} `), 'a notification of another session').toBe(
          true,
        );
      }
    }
  });
  for (const call of model.calls.values()) {
    // Every request is answered at most once (exactly once is checked when the run ends).
    expect(answersTo(real, call).length, `answers to ${call.id}`).toBeLessThanOrEqual(1);
  }
  // The same message gets the same verdict and measure on every channel (a replay is judged as the first delivery).
  for (const { sessionId, message } of real.judged) {
    const call = message.id === undefined ? undefined : model.calls.get(String(message.id));
    if (call === undefined) continue;
    expect(sessionId).toBe(real.clients[call.session]!.sessionId);
    const sent = real.sent.get(call.id)!;
    const over = sent.length > ceilingOf(call.tool);
    expect(message.fate, `the verdict on ${call.id} (${sent.length} bytes, ${call.tool})`).toBe(
      over ? 'replaced' : 'forwarded',
    );
    if (message.bytesIsLowerBound) expect(message.bytes).toBeGreaterThan(ceilingOf(call.tool));
    else expect(message.bytes, `the bytes measured of ${call.id}`).toBe(sent.length);
  }
  // The edge's per-session records are bounded by what still waits.
  for (const [index, client] of real.clients.entries()) {
    const kept = real.edge.edge.sessions.known(client.sessionId);
    if (kept === undefined) continue;
    // What the client has no answer to yet (its answer may wait at the upstream for a resumption); once the
    // exchange that answered a call has closed at the edge (the client may read its end first).
    const unanswered = [...model.calls.values()].filter(
      (c) => c.session === index && c.state !== 'junk' && answersTo(real, c).length === 0,
    ).length;
    await until(
      () => kept.toServer.size <= unanswered,
      () =>
        `requests the edge keeps for session ${client.tag}: ${kept.toServer.size}, unanswered: ${unanswered}`,
    );
    expect(kept.answered.bytes).toBeLessThanOrEqual(DEFAULT_ANSWERED_LIMITS.maxBytes);
    await until(
      () => kept.getStreams === getsOpen(model, index),
      () =>
        `GET streams the edge counts for ${client.tag}: ${kept.getStreams}, open: ${getsOpen(model, index)}`,
    );
  }
}

/** The upstream has answered every call of the stream it will answer: it ends the stream (a cancelled call keeps it open). */
export const finished = (m: Readonly<Model>, stream: ModelStream): boolean =>
  stream.calls.every((id) => !['waiting', 'cancelled'].includes(m.calls.get(id)!.state));

export async function resume(m: Model, r: Real, stream: ModelStream): Promise<void> {
  const from = r.reading.get(stream.key)!;
  const reading = r.clients[stream.session]!.get(`resume-${stream.key}`, from.lastEventId);
  // A client resumes again from the same event when this stream brings none (as the SDKs keep it).
  reading.lastEventId = from.lastEventId;
  r.reading.set(stream.key, reading);
  await until(
    () => reading.status !== undefined,
    () => `the resumption of ${stream.key}`,
  );
  expect(reading.status).toBe(200);
  stream.cut = false;
  stream.resumed = true;
  await delivered(m, r, stream);
  stream.done = finished(m, stream);
}

/** The end of a run: every stream resumed if cut, its calls answered and itself ended; then the final checks. */
export async function drain(m: Model, r: Real): Promise<void> {
  for (const [index, client] of r.clients.entries()) {
    for (const get of client.streams.filter((x) => x.label.startsWith('get-') && !x.ended)) get.abort();
    m.sessions[index]!.gets = 0;
  }
  for (const stream of m.streams.filter((st) => !st.done)) {
    const client = r.clients[stream.session]!;
    const pending = () =>
      stream.calls.map((id) => m.calls.get(id)!).filter((c) => ['waiting', 'stored'].includes(c.state));
    if (stream.cut) {
      if (pending().length === 0) continue;
      await until(
        () => getsOpen(m, stream.session) === (r.edge.edge.sessions.known(client.sessionId)?.getStreams ?? 0),
        () => 'GET streams to close',
      );
      await resume(m, r, stream);
    }
    for (const target of pending()) {
      const bytes = answerBytes(target, m.sessions[target.session]!.tag, false);
      r.sent.set(target.id, bytes);
      r.standIn.answer(target.id, bytes);
      target.state = 'answered';
    }
    await delivered(m, r, stream);
    r.standIn.finish(r.standIn.stream(stream.key)!);
    stream.done = true;
    const reading = r.reading.get(stream.key)!;
    await until(
      () => reading.ended,
      () => `the client's stream of ${stream.key} to end`,
    );
  }
  for (const stream of m.streams) stream.done = true;
  for (const client of r.clients) {
    r.standIn.endAll(client.sessionId);
    await until(
      () => client.streams.every((s) => s.ended),
      () => `every stream of ${client.tag} to end`,
    );
  }
  for (const target of m.calls.values()) {
    const answers = answersTo(r, target).length;
    // Exactly once: a call the upstream answered with junk was answered by bytes no client can read.
    if (target.state === 'answered') expect(answers, `answers to ${target.id}`).toBe(1);
    if (target.state === 'junk') expect(answers).toBe(0);
  }
  await checkInvariants(m, r);
}
