// The bytes the edge holds in flight right now, across every exchange: request bodies being read, JSON
// answers held until they are judged, the SSE event being framed. It is the in-flight term of the memory
// formula (docs/operations.md, Sizing memory), exported as mcp_edge_held_bytes. Each holder owns one Hold
// and says how much it holds after each step; releasing it gives back whatever it still counted.

/** What one holder (a body reader, a relay) holds now. */
export interface Hold {
  /** It holds `bytes` now (not more: the total moves by the difference). */
  set(bytes: number): void;
  /** It holds nothing any more; safe to call twice. */
  release(): void;
}

export class HeldBytes {
  #total = 0;

  get total(): number {
    return this.#total;
  }

  hold(): Hold {
    let mine = 0;
    return {
      set: (bytes: number) => {
        this.#total += bytes - mine;
        mine = bytes;
      },
      release: () => {
        this.#total -= mine;
        mine = 0;
      },
    };
  }
}
