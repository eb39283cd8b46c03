// The window algorithm (window.ts) as Lua, run by Redis (or Valkey) on its own clock: each call is atomic on
// the server, so replicas sharing one Redis never read, decide and write apart (no read-modify-write race).
// A key is one hash: field = slot index, value = what was charged in that slot, plus `u`, the sum of the
// slots held, `o`, the oldest slot held, and `e`, when the key was made (its life: what is given back to a
// slot goes only to the life it was charged in, never to a key made again after a restart); a check reads those, and walks the slots only when the
// oldest has stopped counting (once per slot at most) or to say when a refused key has room. The key
// expires when its newest slot stops counting. One call carries every operation of one edge that waited for
// it (redis-store.ts: one call out at a time), in order: scriptCallOf writes its keys and arguments, and
// takeRepliesOf reads what it answers.
import { LEASE_SHARE } from './leases.js';
import { type QuotaCharge, type QuotaKey, roomNeeded } from './rules.js';
import type { Held } from './store.js';
import { SLOTS } from './window.js';

/** Every key this edge writes starts so: one namespace beside anything else the Redis holds. */
export const KEY_PREFIX = 'mcp-edge:quota:';

/**
 * KEYS: every operation's keys, in order. ARGV: the operations, each
 * - give back (a lease's unspent units, leases.ts, or what an answer did not use of its reservation): 'r', key
 *   count n, then per key amount, slot, life. Replies nothing.
 * - add (an answer's bytes): 'a', key count n, then per key bytes, window ms. Replies nothing.
 * - take: 't', key count n, '1' to charge even when a key has no room (observe mode), then per key window ms,
 *   limit, cost, the room it needs (rules.ts roomNeeded: admitted while use + need <= limit), and the units it
 *   asks to lease. Replies refused index (1-based, 0: none), retry ms, then per key its use (after the charge,
 *   the lease included), the units leased (at most 1/LEASE_SHARE of what is left after the cost; none when a
 *   key was refused), the current slot, the ms until that slot ends, and the key's life.
 */
export const BATCH_SCRIPT = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local reply = {}
local k = 0
local a = 1

-- The key's slots that still count, after letting go of those that do not; recomputes u and o.
local function prune(key, oldest)
  local flat = redis.call('HGETALL', key)
  local u = 0
  local o = nil
  local slots = {}
  for j = 1, #flat, 2 do
    local field = flat[j]
    if field ~= 'u' and field ~= 'o' and field ~= 'e' then
      local slot = tonumber(field)
      if slot < oldest then
        redis.call('HDEL', key, field)
      else
        local amount = tonumber(flat[j + 1])
        u = u + amount
        slots[#slots + 1] = { slot, amount }
        if o == nil or slot < o then o = slot end
      end
    end
  end
  if o == nil then
    redis.call('HDEL', key, 'u', 'o')
  else
    redis.call('HSET', key, 'u', u, 'o', o)
  end
  return u, slots
end

-- The key's use now, its oldest slot and its life: its sum, unless that slot has stopped counting.
local function useOf(key, oldest)
  local held = redis.call('HMGET', key, 'u', 'o', 'e')
  local o = tonumber(held[2])
  local e = tonumber(held[3])
  if o == nil then return 0, nil, e end
  if o < oldest then
    prune(key, oldest)
    held = redis.call('HMGET', key, 'u', 'o')
    return tonumber(held[1]) or 0, tonumber(held[2]), e
  end
  return tonumber(held[1]) or 0, o, e
end

-- Adds amount to the key's current slot; o is its oldest slot as read in this call (false: read it here).
-- Only a slot's first charge can make it the oldest or move the key's expiry (when its newest slot stops
-- counting, the same for every charge of the slot): true when this was one.
local function charge(key, w, amount, o)
  local cur = math.floor(now * ${SLOTS} / w)
  redis.call('HINCRBY', key, 'u', amount)
  if redis.call('HINCRBY', key, cur, amount) ~= amount then return false end
  redis.call('HSETNX', key, 'e', now)
  if o == false then o = tonumber(redis.call('HGET', key, 'o')) end
  if o == nil or cur < o then redis.call('HSET', key, 'o', cur) end
  redis.call('PEXPIRE', key, math.ceil((cur + 1) * w / ${SLOTS} + w - now))
  return true
end

local function take(n, force)
  local used = {}
  local oldestHeld = {}
  local lives = {}
  local refused = 0
  local retryMs = 0
  for i = 1, n do
    local b = a + (i - 1) * 5
    local key = KEYS[k + i]
    local w = tonumber(ARGV[b])
    local limit = tonumber(ARGV[b + 1])
    local need = tonumber(ARGV[b + 3])
    local oldest = math.floor(now * ${SLOTS} / w) - ${SLOTS}
    local u, o, e = useOf(key, oldest)
    used[i] = u
    oldestHeld[i] = o
    lives[i] = e
    if refused == 0 and u + need > limit then
      refused = i
      local _, slots = prune(key, oldest)
      table.sort(slots, function(x, y) return x[1] < y[1] end)
      local remaining = u
      local at = now + w
      for _, s in ipairs(slots) do
        remaining = remaining - s[2]
        at = (s[1] + 1) * w / ${SLOTS} + w
        if remaining + need <= limit then break end
      end
      retryMs = at - now
    end
  end
  local leased = {}
  for i = 1, n do
    local b = a + (i - 1) * 5
    local cost = tonumber(ARGV[b + 2])
    local lease = 0
    if refused == 0 then
      local left = tonumber(ARGV[b + 1]) - used[i] - cost
      if left > 0 then lease = math.min(tonumber(ARGV[b + 4]), math.floor(left / ${LEASE_SHARE})) end
    end
    leased[i] = lease
    if (refused == 0 or force) and cost + lease > 0 then
      charge(KEYS[k + i], tonumber(ARGV[b]), cost + lease, oldestHeld[i])
      used[i] = used[i] + cost + lease
      -- A key made before keys had a life gets one now.
      if lives[i] == nil then
        redis.call('HSETNX', KEYS[k + i], 'e', now)
        lives[i] = tonumber(redis.call('HGET', KEYS[k + i], 'e'))
      end
    end
  end
  reply[#reply + 1] = refused
  reply[#reply + 1] = math.ceil(retryMs)
  for i = 1, n do
    local w = tonumber(ARGV[a + (i - 1) * 5])
    local cur = math.floor(now * ${SLOTS} / w)
    reply[#reply + 1] = used[i]
    reply[#reply + 1] = leased[i]
    reply[#reply + 1] = cur
    reply[#reply + 1] = math.floor((cur + 1) * w / ${SLOTS} - now)
    reply[#reply + 1] = lives[i] or 0
  end
end

-- Gives back units to the slot they were charged in, while the key still holds it in the same life.
local function giveBack(n)
  for i = 1, n do
    local key = KEYS[k + i]
    local b = a + (i - 1) * 3
    local slot = ARGV[b + 1]
    local held = redis.call('HMGET', key, slot, 'e')
    local amount = tonumber(held[1])
    if amount ~= nil and amount > 0 and tonumber(held[2]) == tonumber(ARGV[b + 2]) then
      amount = math.min(amount, tonumber(ARGV[b]))
      redis.call('HINCRBY', key, slot, -amount)
      redis.call('HINCRBY', key, 'u', -amount)
    end
  end
end

local function add(n)
  for i = 1, n do
    local key = KEYS[k + i]
    local w = tonumber(ARGV[a + (i - 1) * 2 + 1])
    -- A key only answers reach (no check reads it) is pruned once it holds more slots than count.
    if charge(key, w, tonumber(ARGV[a + (i - 1) * 2]), false) and redis.call('HLEN', key) > ${SLOTS} + 4 then
      prune(key, math.floor(now * ${SLOTS} / w) - ${SLOTS})
    end
  end
end

while a <= #ARGV do
  local op = ARGV[a]
  local n = tonumber(ARGV[a + 1])
  if op == 't' then
    local force = ARGV[a + 2] == '1'
    a = a + 3
    take(n, force)
    a = a + 5 * n
  elseif op == 'r' then
    a = a + 2
    giveBack(n)
    a = a + 3 * n
  else
    a = a + 2
    add(n)
    a = a + 2 * n
  end
  k = k + n
end
return reply
`;

/** A take as the script is asked it: its charges, observe mode, and the units each charge asks to lease. */
export interface ScriptTake {
  charges: readonly QuotaCharge[];
  force: boolean;
  wants: readonly number[];
}

/** One call's KEYS and ARGV: the units given back, then the answers' bytes, then the takes, in order. */
export function scriptCallOf(
  returns: readonly Held[],
  adds: Iterable<{ key: QuotaKey; amount: number }>,
  takes: readonly ScriptTake[],
): { keys: string[]; args: (string | number)[] } {
  const keys: string[] = [];
  const args: (string | number)[] = [];
  if (returns.length > 0) {
    args.push('r', returns.length);
    for (const { key, slot, life, amount } of returns) {
      keys.push(KEY_PREFIX + key.id);
      args.push(amount, slot, life);
    }
  }
  const added = [...adds];
  if (added.length > 0) {
    args.push('a', added.length);
    for (const { key, amount } of added) {
      keys.push(KEY_PREFIX + key.id);
      args.push(amount, key.rule.windowMs);
    }
  }
  for (const { charges, force, wants } of takes) {
    args.push('t', charges.length, force ? '1' : '0');
    charges.forEach((charge, i) => {
      keys.push(KEY_PREFIX + charge.key.id);
      args.push(charge.key.rule.windowMs, charge.limit, charge.cost, roomNeeded(charge), wants[i] ?? 0);
    });
  }
  return { keys, args };
}

/** What the script answered for one key of a take. */
export interface KeyReply {
  /** The store's count after the take, the units leased included. */
  counted: number;
  leased: number;
  slot: number;
  /** Ms until that slot ends, on Redis' clock. */
  slotLeftMs: number;
  /** The key's life (0 when it was refused before it was ever charged). */
  life: number;
}

/** What the script answered for one take. */
export interface TakeReply {
  /** Index of the first key without room, or -1. */
  refused: number;
  retryMs: number;
  keys: KeyReply[];
}

/** The script's reply, read per take (`takes` as sent). */
export function takeRepliesOf(reply: readonly number[], takes: readonly ScriptTake[]): TakeReply[] {
  let at = 0;
  return takes.map(({ charges }) => {
    const refused = (reply[at] ?? 0) - 1;
    const retryMs = reply[at + 1] ?? 0;
    at += 2;
    const keys = charges.map(() => {
      const [counted = 0, leased = 0, slot = 0, slotLeftMs = 0, life = 0] = reply.slice(at, at + 5);
      at += 5;
      return { counted, leased, slot, slotLeftMs, life };
    });
    return { refused, retryMs, keys };
  });
}
