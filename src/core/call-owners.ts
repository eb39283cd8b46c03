// Which call a stdio child's message belongs to: the one owner of "whose id, whose progress token" on one
// child. A call claims the ids it waits on and the progress tokens it named; no other call can claim them
// while it holds them. An id stays claimed until the child answers it (or the child is gone), even after
// the call's client left: the child may still answer, and that answer must reach nobody else. A progress
// token is held as long as any id of its call is, since progress may come until the answer does.
// Plain values, no clocks or sockets (src/upstream/stdio-child.ts uses it; test/unit/call-owners.test.ts).

/** What another call holds, that a new call wanted. */
export interface ClaimConflict {
  kind: 'id' | 'progress token';
  /** The key as claimed (an idKey). */
  key: string;
}

/** The call a message belongs to, and whether its client still waits for it. */
export interface Owner<C> {
  call: C;
  /** Its client left (timed out, disconnected): what comes for it is dropped, counted and logged. */
  abandoned: boolean;
}

interface Claim<C> extends Owner<C> {
  ids: Set<string>;
  tokens: Set<string>;
  /** Ids its own client cancelled: a child need not answer them, so they are freed once the client left. */
  cancelled: Set<string>;
}

export class CallOwners<C> {
  private readonly byId = new Map<string, Claim<C>>();
  private readonly byToken = new Map<string, Claim<C>>();
  private readonly claims = new Map<C, Claim<C>>();
  private abandonedIdCount = 0;
  private liveCallCount = 0;

  /** The first id or token another call holds, or undefined when these can all be claimed now. */
  conflictOf(ids: Iterable<string>, tokens: Iterable<string>): ClaimConflict | undefined {
    for (const key of ids) if (this.byId.has(key)) return { kind: 'id', key };
    for (const key of tokens) if (this.byToken.has(key)) return { kind: 'progress token', key };
    return undefined;
  }

  /** Claims ids and tokens for a call; the caller has checked conflictOf. A call with no ids claims nothing. */
  claim(call: C, ids: Iterable<string>, tokens: Iterable<string>): void {
    const claim: Claim<C> = {
      call,
      abandoned: false,
      ids: new Set(ids),
      tokens: new Set(tokens),
      cancelled: new Set(),
    };
    if (claim.ids.size === 0) return;
    this.claims.set(call, claim);
    this.liveCallCount++;
    for (const key of claim.ids) this.byId.set(key, claim);
    for (const key of claim.tokens) this.byToken.set(key, claim);
  }

  /** The owner of an answer's id; the id is released (and the call's tokens with its last id). */
  answered(key: string): Owner<C> | undefined {
    const claim = this.byId.get(key);
    if (claim === undefined) return undefined;
    this.byId.delete(key);
    claim.ids.delete(key);
    if (claim.abandoned) this.abandonedIdCount--;
    if (claim.ids.size === 0) this.release(claim);
    return { call: claim.call, abandoned: claim.abandoned };
  }

  /** The owner of an id, if a call holds it (the id stays claimed). */
  ownerOfId(key: string): Owner<C> | undefined {
    const claim = this.byId.get(key);
    return claim === undefined ? undefined : { call: claim.call, abandoned: claim.abandoned };
  }

  /** The owner of a progress token, if a call holds it. */
  ownerOfToken(key: string): Owner<C> | undefined {
    const claim = this.byToken.get(key);
    return claim === undefined ? undefined : { call: claim.call, abandoned: claim.abandoned };
  }

  /** The call's client left: its ids and tokens stay claimed until the child answers them. */
  abandon(call: C): void {
    const claim = this.claims.get(call);
    if (claim === undefined || claim.abandoned) return;
    claim.abandoned = true;
    this.liveCallCount--;
    this.abandonedIdCount += claim.ids.size;
    for (const key of claim.cancelled) this.answered(key);
  }

  /**
   * The id's own client cancelled it (only a session's client can be known to be its own): the child may
   * never answer it, so the claim ends now if the client has left, or when it leaves.
   */
  cancel(key: string): void {
    const claim = this.byId.get(key);
    if (claim === undefined) return;
    if (claim.abandoned) this.answered(key);
    else claim.cancelled.add(key);
  }

  /** Calls whose clients still wait, each once. */
  liveCalls(): C[] {
    const calls: C[] = [];
    for (const claim of this.claims.values()) if (!claim.abandoned) calls.push(claim.call);
    return calls;
  }

  get liveCount(): number {
    return this.liveCallCount;
  }

  /** Ids claimed by calls whose clients left, not answered yet. */
  get abandonedIds(): number {
    return this.abandonedIdCount;
  }

  /** Forgets every claim (the child is gone); returns the calls whose clients still wait. */
  clear(): C[] {
    const live = this.liveCalls();
    this.byId.clear();
    this.byToken.clear();
    this.claims.clear();
    this.abandonedIdCount = 0;
    this.liveCallCount = 0;
    return live;
  }

  private release(claim: Claim<C>): void {
    this.claims.delete(claim.call);
    if (!claim.abandoned) this.liveCallCount--;
    for (const key of claim.tokens) if (this.byToken.get(key) === claim) this.byToken.delete(key);
  }
}
