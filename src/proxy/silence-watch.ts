// Watches streams for silence with one timer for all of them: a stream notes its activity (one clock read
// per chunk) instead of re-arming a timer of its own, which costs a timer per stream and a re-arm per chunk.

export interface WatchedStream {
  /** Something arrived: the silence starts again. */
  touch(): void;
  /** No longer watched. */
  stop(): void;
}

interface Entry {
  last: number;
  onSilent: () => void;
}

export class SilenceWatch {
  readonly #entries = new Set<Entry>();
  #timer: NodeJS.Timeout | undefined;
  /** How often silence is checked: a stream is ended between silenceMs and silenceMs + this after its last byte. */
  readonly #checkMs: number;

  constructor(private readonly silenceMs: number) {
    this.#checkMs = Math.min(1000, Math.max(20, Math.floor(silenceMs / 4)));
  }

  /** Calls onSilent once if nothing is touched for silenceMs (0: never). */
  watch(onSilent: () => void): WatchedStream {
    if (this.silenceMs === 0) return { touch() {}, stop() {} };
    const entry: Entry = { last: Date.now(), onSilent };
    this.#entries.add(entry);
    this.#start();
    return {
      touch: () => {
        entry.last = Date.now();
      },
      stop: () => {
        this.#entries.delete(entry);
      },
    };
  }

  #start(): void {
    if (this.#timer !== undefined) return;
    this.#timer = setInterval(() => this.#check(), this.#checkMs);
    this.#timer.unref();
  }

  #check(): void {
    const now = Date.now();
    for (const entry of this.#entries) {
      if (now - entry.last < this.silenceMs) continue;
      this.#entries.delete(entry);
      entry.onSilent();
    }
    if (this.#entries.size === 0 && this.#timer !== undefined) {
      clearInterval(this.#timer);
      this.#timer = undefined;
    }
  }
}
