// How many upstream connections calls and GET streams may hold (src/upstream/http-upstream.ts). Each kind
// has its own pool and its own count, so GET streams that stay open for hours never hold the connection a
// call needs: a call (POST, DELETE) waits for one of its own at most upstream.timeouts.queue, and a GET
// past the stream capacity is answered at once. The counts match the pools' sizes, so undici's own queue,
// where no timeout runs, is never where a request waits.

/** Ends one holding of a slot; a second call does nothing. */
export type Release = () => void;

interface Waiter {
  start: (release: Release) => void;
  expire: () => void;
  timer: NodeJS.Timeout | undefined;
}

/**
 * Slots for calls: at most `capacity` held at once; a call beyond them waits, first come first served, up
 * to `queueTimeout` ms (0: not at all), and at most `capacity` calls wait (a call beyond them is expired at
 * once), so what waits is bounded by configuration, not by how many requests a client sends.
 */
export class CallSlots {
  #held = 0;
  /** Insertion-ordered: the first waiter is the oldest. */
  readonly #waiting = new Set<Waiter>();

  constructor(
    readonly capacity: number,
    readonly queueTimeout: number,
  ) {}

  get held(): number {
    return this.#held;
  }

  get waiting(): number {
    return this.#waiting.size;
  }

  /**
   * Runs `start` with the slot's release now, or once a slot is free; or `expire` when the wait is over.
   * Returns what a caller that went away calls: it takes the call out of the queue (a started call keeps its
   * slot until its release).
   */
  acquire(start: (release: Release) => void, expire: () => void): () => void {
    if (this.#held < this.capacity) {
      this.#held++;
      start(this.#releaser());
      return () => {};
    }
    if (this.queueTimeout === 0 || this.#waiting.size >= this.capacity) {
      expire();
      return () => {};
    }
    const waiter: Waiter = { start, expire, timer: undefined };
    waiter.timer = setTimeout(() => {
      this.#waiting.delete(waiter);
      expire();
    }, this.queueTimeout);
    this.#waiting.add(waiter);
    return () => {
      if (this.#waiting.delete(waiter)) clearTimeout(waiter.timer);
    };
  }

  #releaser(): Release {
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const next = this.#waiting.values().next();
      if (next.done) {
        this.#held--;
        return;
      }
      // The slot passes straight to the oldest waiter.
      this.#waiting.delete(next.value);
      clearTimeout(next.value.timer);
      next.value.start(this.#releaser());
    };
  }
}

/**
 * Slots for GET streams: at most `capacity` open through the edge. A session's own share is not counted here
 * but in its SessionState (server.maxGetStreamsPerSession, src/proxy/get-streams.ts), for every upstream kind.
 */
export class StreamSlots {
  #open = 0;

  constructor(readonly capacity: number) {}

  get openStreams(): number {
    return this.#open;
  }

  /** A slot for one stream, or undefined when all are taken. */
  open(): Release | undefined {
    if (this.#open >= this.capacity) return undefined;
    this.#open++;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.#open--;
    };
  }
}
