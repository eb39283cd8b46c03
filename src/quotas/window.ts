// The window algorithm every store runs (the Redis store runs the same steps in Lua: redis-script.ts).
//
// A rule's window W is kept per key as SLOTS slots of W/SLOTS each: slot i holds what was charged while
// floor(t * SLOTS / W) = i. A key's use at time t is the sum of slots cur-SLOTS .. cur (cur = t's slot): a
// charge counts from the moment it is made until the end of its slot plus W, so it counts for at least W and
// at most W + W/SLOTS.
//
// Accuracy: no span of length W ever admits more than the limit (every charge still counts W after it was
// made), and a charge frees its budget at most W/SLOTS late (1 s of a 1 min window). Against `requests` the
// admission is exact: a request is admitted while use + its count stays within the limit, atomically per
// store. A bytes charge is admitted while use + every part of it but the largest stays under the limit: the
// last message of a batch, or the last answer, may cross it, never more (roomNeeded in rules.ts). Answers are
// reserved at admission and their real bytes charged on delivery (src/proxy/filters/quota-reservations.ts).

/** How many slots one window is kept as. */
export const SLOTS = 60;

/** The slot `nowMs` falls in, for a window of `windowMs`. */
export function slotOf(nowMs: number, windowMs: number): number {
  return Math.floor((nowMs * SLOTS) / windowMs);
}

/** The first slot that still counts at `nowMs`. */
export function oldestCountedSlot(nowMs: number, windowMs: number): number {
  return slotOf(nowMs, windowMs) - SLOTS;
}

/** When slot `slot`'s charges stop counting: the end of the slot plus the window. */
export function slotFreedAt(slot: number, windowMs: number): number {
  return ((slot + 1) * windowMs) / SLOTS + windowMs;
}

/** A key's slots: slot index to what was charged in it. */
export type Slots = Map<number, number>;

/** The use of `slots` at `nowMs`; drops the slots that no longer count. */
export function useOf(slots: Slots, nowMs: number, windowMs: number): number {
  const oldest = oldestCountedSlot(nowMs, windowMs);
  let used = 0;
  for (const [slot, amount] of slots) {
    if (slot < oldest) slots.delete(slot);
    else used += amount;
  }
  return used;
}

/**
 * Seconds until `slots` (using `used` of `limit` now) leaves room for `need` more (roomNeeded): the oldest
 * slots free first. Whole seconds, at least 1 (Retry-After's unit).
 */
export function retryAfterSeconds(
  slots: ReadonlyMap<number, number>,
  used: number,
  limit: number,
  need: number,
  nowMs: number,
  windowMs: number,
): number {
  const ordered = [...slots.entries()].sort((a, b) => a[0] - b[0]);
  let remaining = used;
  let at = nowMs + windowMs;
  for (const [slot, amount] of ordered) {
    remaining -= amount;
    at = slotFreedAt(slot, windowMs);
    if (remaining + need <= limit) break;
  }
  return Math.max(1, Math.ceil((at - nowMs) / 1000));
}
