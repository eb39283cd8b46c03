// The commands of the model of the exchange (issue 42, item 1) and the end of a run, for fast-check's model-based
// property in test/reliability/exchange-model.test.ts: what a client or the upstream stand-in does, each with
// its precondition on the model, what it expects to see, and the invariants checked after it.
import fc from 'fast-check';
import { expect } from 'vitest';
import { ClientSession, REPLAY, until } from './exchange-client.js';
import {
  answerBytes,
  answersTo,
  checkInvariants,
  delivered,
  finished,
  getsOpen,
  live,
  MAX_GET_STREAMS,
  type Model,
  noteBytes,
  type Real,
  resume,
  streamOf,
  type Tool,
  waitingCalls,
} from './exchange-model.js';
import type { Channel } from './exchange-stand-in.js';

type Command = fc.AsyncCommand<Model, Real>;

/** A fast-check command from its precondition, its run and its name. */
function command(
  name: string,
  check: (m: Readonly<Model>) => boolean,
  run: (m: Model, r: Real) => Promise<void>,
): Command {
  return {
    check,
    run: async (m, r) => {
      await run(m, r);
      await checkInvariants(m, r);
    },
    toString: () => name,
  };
}

const pick = <T>(items: readonly T[], n: number): T => items[n % items.length]!;

/** Sessions opened so far, across runs: every tag, and so every call id, is new. */
let runs = 0;

export async function openFirst(m: Model, r: Real): Promise<void> {
  const tag = `r${++runs}c${m.sessions.length}`;
  r.clients.push(await ClientSession.open(tag, r.edge.url));
  m.sessions.push({ tag, gets: 0, notes: 0 });
}

const openSession = fc
  .constant(null)
  .map(() => command('openSession', (m) => m.sessions.length < 2, openFirst));

const channel: fc.Arbitrary<Channel> = fc.record({
  kind: fc.constantFrom('json', 'sse'),
  eventIds: fc.boolean(),
});

const call = fc
  .tuple(fc.nat(), fc.array(fc.constantFrom<Tool>('capped', 'free'), { minLength: 1, maxLength: 2 }), channel)
  .map(([s, tools, via]) =>
    command(
      `call(${s}, ${tools.join('+')}, ${via.kind}${via.kind === 'sse' && via.eventIds ? ' with ids' : ''})`,
      (m) => m.sessions.length > 0,
      async (m, r) => {
        const session = s % m.sessions.length;
        const client = r.clients[session]!;
        const ids = tools.map(() => `${client.tag}-${++m.count}`);
        const requests = tools.map((tool, i) => ({
          jsonrpc: '2.0',
          id: ids[i],
          method: 'tools/call',
          params: { name: tool, arguments: {} },
        }));
        r.standIn.next = { kind: via.kind, eventIds: via.kind === 'sse' && via.eventIds };
        const stream = client.post(ids[0]!, tools.length === 1 ? requests[0] : requests);
        r.reading.set(ids[0]!, stream);
        await until(
          () =>
            r.standIn.stream(ids[0]!) !== undefined && (via.kind === 'json' || stream.status !== undefined),
          () => `the upstream to hold ${ids[0]}`,
        );
        if (via.kind === 'sse') expect(stream.status).toBe(200);
        m.streams.push({
          key: ids[0]!,
          session,
          channel: r.standIn.next,
          calls: ids,
          cut: false,
          resumed: false,
          done: false,
        });
        for (const [i, id] of ids.entries())
          m.calls.set(id, { id, session, tool: tools[i]!, stream: ids[0]!, state: 'waiting' });
      },
    ),
  );

const answer = fc.tuple(fc.nat(), fc.boolean(), fc.nat(9)).map(([n, big, junk]) =>
  command(
    `answer(${n}, ${big ? 'big' : 'small'}${junk === 0 ? ', not JSON' : ''})`,
    (m) => waitingCalls(m).length > 0,
    async (m, r) => {
      const target = pick(waitingCalls(m), n);
      const stream = streamOf(m, target);
      const tag = m.sessions[target.session]!.tag;
      const json = stream.channel.kind === 'json';
      const alone = json && stream.calls.length === 1;
      if (junk === 0 && alone) {
        // A JSON body no client can read: the client gets it as it came.
        r.standIn.answer(target.id, Buffer.from(`not JSON, for ${target.id}`));
        target.state = 'junk';
        stream.done = true;
        await until(
          () => r.reading.get(stream.key)!.unreadable === 1,
          () => `the junk answer to ${target.id}`,
        );
        return;
      }
      const atServer = r.standIn.stream(target.id)!;
      if (junk === 0 && !json) r.standIn.send(atServer, Buffer.from(`not JSON either, before ${target.id}`));
      const bytes = answerBytes(target, tag, big);
      r.sent.set(target.id, bytes);
      r.standIn.answer(target.id, bytes);
      target.state = stream.cut ? 'stored' : 'answered';
      stream.done = finished(m, stream);
      // A JSON body goes when its last call is answered; an SSE event at once, unless its stream was cut.
      if (json ? stream.done : !stream.cut) await delivered(m, r, stream);
    },
  ),
);

const notify = fc.tuple(fc.nat(), fc.boolean(), fc.boolean()).map(([s, onCall, big]) => {
  const target = (m: Readonly<Model>) =>
    m.streams.find(
      (st) => st.session === s % Math.max(1, m.sessions.length) && st.channel.kind === 'sse' && live(st),
    );
  return command(
    `notify(${s}, ${onCall ? 'on a call stream' : 'on the GET stream'}, ${big ? 'big' : 'small'})`,
    (m) =>
      m.sessions.length > 0 &&
      (onCall ? target(m) !== undefined : m.sessions[s % m.sessions.length]!.gets > 0),
    async (m, r) => {
      const session = s % m.sessions.length;
      const data = noteBytes(m.sessions[session]!.tag, big);
      if (onCall) r.standIn.send(r.standIn.stream(target(m)!.key)!, data);
      else r.standIn.notifyOnGet(r.clients[session]!.sessionId, data);
      const expected = ++m.sessions[session]!.notes;
      const client = r.clients[session]!;
      const notes = () =>
        client.messages().filter((x) => (x as { method?: string }).method !== undefined).length;
      await until(
        () => notes() === expected,
        () => `notification ${expected} of ${client.tag}: ${notes()} read`,
      );
    },
  );
});

const openGet = fc.nat().map((s) =>
  command(
    `openGet(${s})`,
    (m) => m.sessions.length > 0,
    async (m, r) => {
      const session = s % m.sessions.length;
      const room = getsOpen(m, session) < MAX_GET_STREAMS;
      const stream = r.clients[session]!.get(`get-${++m.count}`);
      await until(
        () => stream.status !== undefined,
        () => 'the GET stream to open',
      );
      // Past server.maxGetStreamsPerSession the edge answers 405, as a server without GET streams does.
      expect(stream.status).toBe(room ? 200 : 405);
      if (room) m.sessions[session]!.gets++;
    },
  ),
);

const closeGet = fc.nat().map((s) =>
  command(
    `closeGet(${s})`,
    (m) => m.sessions.length > 0 && m.sessions[s % m.sessions.length]!.gets > 0,
    async (m, r) => {
      const session = s % m.sessions.length;
      const open = r.clients[session]!.streams.filter(
        (x) => x.label.startsWith('get-') && x.status === 200 && !x.ended,
      );
      open[0]!.abort();
      m.sessions[session]!.gets--;
      // Closed at the client, at the edge and so at the upstream, which sends its notifications on the rest.
      await until(
        () => open[0]!.ended && r.standIn.getsOf(r.clients[session]!.sessionId) === m.sessions[session]!.gets,
        () => 'the GET stream to close',
      );
    },
  ),
);

const cuttable = (m: Readonly<Model>) =>
  m.streams.filter(
    (st) =>
      st.channel.kind === 'sse' && live(st) && st.calls.some((id) => m.calls.get(id)!.state === 'waiting'),
  );

const cut = fc.nat().map((n) =>
  command(
    `cut(${n})`,
    (m) => cuttable(m).length > 0,
    async (m, r) => {
      const stream = pick(cuttable(m), n);
      const reading = r.reading.get(stream.key)!;
      r.standIn.cut(r.standIn.stream(stream.key)!);
      await until(
        () => reading.ended,
        () => `the client's stream of ${stream.key} to end`,
      );
      if (stream.channel.eventIds) {
        // Resumable: what waits is left to the client's resumption.
        stream.cut = true;
        stream.resumed = false;
        return;
      }
      // Not resumable: the edge answers every call still waiting there (a cancelled one too).
      stream.done = true;
      for (const id of stream.calls) {
        const target = m.calls.get(id)!;
        if (target.state === 'waiting' || target.state === 'cancelled') {
          await until(
            () => answersTo(r, target).length === 1,
            () => `the edge's answer to ${id}`,
          );
          if (target.state === 'waiting') target.state = 'answered';
        }
      }
    },
  ),
);

const resumable = (m: Readonly<Model>) =>
  m.streams.filter(
    (st) =>
      st.cut &&
      st.calls.some((id) => ['waiting', 'stored'].includes(m.calls.get(id)!.state)) &&
      getsOpen(m, st.session) < MAX_GET_STREAMS,
  );

const resumeCut = fc.nat().map((n) =>
  command(
    `resume(${n})`,
    (m) => resumable(m).length > 0,
    (m, r) => resume(m, r, pick(resumable(m), n)),
  ),
);

/** Resumable streams whose every call is answered and delivered: a client may ask for them again from their start. */
const replayable = (m: Readonly<Model>) =>
  m.streams.filter(
    (st) =>
      st.channel.eventIds &&
      st.done &&
      !st.cut &&
      st.calls.every((id) => m.calls.get(id)!.state === 'answered') &&
      getsOpen(m, st.session) < MAX_GET_STREAMS,
  );

const replay = fc.nat().map((n) =>
  command(
    `replay(${n})`,
    (m) => replayable(m).length > 0,
    async (m, r) => {
      const stream = pick(replayable(m), n);
      const client = r.clients[stream.session]!;
      // From its priming event: the upstream sends every event of the stream again.
      const priming = r.standIn.stream(stream.key)!.events[0]!.id!;
      const again = client.get(`${REPLAY}${stream.key}`, priming);
      await until(
        () => again.ended,
        () => `the replay of ${stream.key}`,
      );
      expect(again.status).toBe(200);
      // Each answer delivered again as it was the first time: the same bytes, or the edge's error for the same
      // ceiling (the size it names may differ: a lower bound where the first was replaced as it crossed).
      const verdict = (message: unknown) => {
        const { error, ...rest } = message as {
          error?: { code?: number; data?: { limit?: string; tool?: string } };
        };
        if (error === undefined) return rest;
        return { ...rest, code: error.code, limit: error.data?.limit, tool: error.data?.tool };
      };
      for (const id of stream.calls) {
        const first = answersTo(r, m.calls.get(id)!);
        const replayed = again.messages.filter((x) => (x as { id?: unknown }).id === id);
        expect(replayed.map(verdict), `the replay of ${id}`).toEqual(first.map(verdict));
      }
    },
  ),
);

const cancel = fc.nat().map((n) => {
  // Calls on SSE streams: a JSON body must still answer its POST.
  const cancellable = (m: Readonly<Model>) =>
    waitingCalls(m).filter((c) => streamOf(m, c).channel.kind === 'sse');
  return command(
    `cancel(${n})`,
    (m) => cancellable(m).length > 0,
    async (m, r) => {
      const target = pick(cancellable(m), n);
      const note = r.clients[target.session]!.post(`cancel-${target.id}`, {
        jsonrpc: '2.0',
        method: 'notifications/cancelled',
        params: { requestId: target.id, reason: 'model' },
      });
      await until(
        () => note.ended,
        () => `the cancellation of ${target.id}`,
      );
      expect(note.status).toBe(202);
      target.state = 'cancelled';
    },
  );
});

/** The commands a run draws from: calls and answers, most of an exchange, three times as often as the rest. */
export const EXCHANGE_COMMANDS = [
  openSession,
  call,
  call,
  call,
  answer,
  answer,
  answer,
  notify,
  openGet,
  closeGet,
  cut,
  resumeCut,
  replay,
  cancel,
];
