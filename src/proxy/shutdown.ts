// The one place that ends an exchange because mcp-edge shuts down. An exchange is followed from the moment
// it goes to the upstream until its response closes. When shutdown begins, GET exchanges (standalone streams
// and resumptions, which never end by themselves) end at once; once server.timeouts.shutdownGrace is over,
// every exchange still open ends. A relay whose answer has begun ends it its own way (Exchange.shutdownEnding:
// every request still waiting on an SSE stream gets the shutdown error, whatever the stream's event ids, since
// no one can resume a stream through an edge that exits); any other exchange is answered 503 with the shutdown
// error for its id. An exchange that would go to the upstream after that point is refused instead.
import type { FastifyReply } from 'fastify';
import { guardWith } from '../core/guard.js';
import { edgeAnswer } from '../core/refusals/answers.js';
import { onlyRequestWaiting } from '../exchange/exchange.js';
import type { RelayLog } from './client-response.js';
import type { Respond } from './local-reply.js';

type Phase = 'serving' | 'draining' | 'over';

export class Shutdown {
  #phase: Phase = 'serving';
  /**
   * The responses of exchanges that went to the upstream and have not closed yet, each in a slot cleared when
   * it closes; cleared slots are reused, so the array is as long as the most exchanges open at once. Not a Set:
   * a Set (or Map) of the exchanges in flight keeps each exchange's objects alive through the minor GCs, so
   * they are promoted (the heap climbs between full GCs and scavenges take ten times as long; seen with
   * --trace-gc, as with the Drain's record before it); cleared array slots do not.
   */
  readonly #open: (FastifyReply | undefined)[] = [];
  readonly #freeSlots: number[] = [];
  /** Ends one exchange; one that throws must not keep the others from ending. */
  readonly #end: (reply: FastifyReply) => void;

  constructor(
    private readonly respond: Respond,
    log: RelayLog,
  ) {
    const guard = guardWith((err) =>
      log.error(
        { err },
        'mcp-edge failed ending an exchange at shutdown; its connection closes with the rest',
      ),
    );
    this.#end = guard((reply: FastifyReply) => {
      const exchange = reply.request.exchange;
      const ending = exchange?.shutdownEnding;
      if (ending !== undefined) ending.end();
      else this.respond(reply, edgeAnswer('ended_by_shutdown', {}, onlyRequestWaiting(exchange)));
    });
  }

  /**
   * The exchange goes to the upstream now, and is followed until its response closes; false when shutdown
   * has reached it already: it was refused (never sent), since nothing would wait for its answer.
   */
  sending(reply: FastifyReply): boolean {
    if (this.#phase === 'over' || (this.#phase === 'draining' && reply.request.method === 'GET')) {
      this.respond(reply, edgeAnswer('shutting_down', {}, onlyRequestWaiting(reply.request.exchange)));
      return false;
    }
    const slot = this.#freeSlots.pop() ?? this.#open.length;
    this.#open[slot] = reply;
    reply.raw.once('close', () => {
      this.#open[slot] = undefined;
      this.#freeSlots.push(slot);
    });
    return true;
  }

  /** Of the exchanges followed, how many relay an SSE stream now. */
  streams(): number {
    let streams = 0;
    for (const reply of this.#open) if (reply?.request.exchange?.shutdownEnding?.stream === true) streams++;
    return streams;
  }

  /** Shutdown begins: GET exchanges end now; the others have the grace period. */
  begin(): void {
    this.#phase = 'draining';
    for (const reply of this.#open) if (reply?.request.method === 'GET') this.#end(reply);
  }

  /** server.timeouts.shutdownGrace is over: every exchange still open ends now. */
  graceOver(): void {
    this.#phase = 'over';
    for (const reply of this.#open) if (reply !== undefined) this.#end(reply);
  }
}
