// The window algorithm (window.ts) as Lua, run by Redis (or Valkey) on its own clock: each call is atomic on
// the server, so replicas sharing one Redis never read, decide and write apart (no read-modify-write race).
// A key is one hash: field = slot index, value = what was charged in that slot; it expires when its newest
// slot stops counting. One call carries every operation of one event-loop turn of one edge, in order.
import { SLOTS } from './window.js';

/**
 * KEYS: every operation's keys, in order. ARGV: the operations, each
 * - take: 't', key count n, '1' to charge even when a key has no room (observe mode), then per key window ms,
 *   limit, cost, '1' when it counts requests (fit whole) else bytes (room for one byte). Replies refused index
 *   (1-based, 0: none), retry ms, and each key's use.
 * - add (an answer's bytes): 'a', key count n, then per key bytes, window ms. Replies nothing.
 */
export const BATCH_SCRIPT = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local reply = {}
local k = 0
local a = 1

local function expire(key, cur, w)
  redis.call('PEXPIRE', key, math.ceil((cur + 1) * w / ${SLOTS} + w - now))
end

local function take(n, force)
  local used = {}
  local refused = 0
  local retryMs = 0
  for i = 1, n do
    local b = a + (i - 1) * 4
    local key = KEYS[k + i]
    local w = tonumber(ARGV[b])
    local limit = tonumber(ARGV[b + 1])
    local cost = tonumber(ARGV[b + 2])
    local whole = ARGV[b + 3] == '1'
    local oldest = math.floor(now * ${SLOTS} / w) - ${SLOTS}
    local flat = redis.call('HGETALL', key)
    local u = 0
    local slots = {}
    for j = 1, #flat, 2 do
      local slot = tonumber(flat[j])
      if slot < oldest then
        redis.call('HDEL', key, flat[j])
      else
        local amount = tonumber(flat[j + 1])
        u = u + amount
        slots[#slots + 1] = { slot, amount }
      end
    end
    used[i] = u
    local room
    if whole then room = u + cost <= limit else room = u < limit end
    if refused == 0 and not room then
      refused = i
      local need = 1
      if whole then need = cost end
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
  if refused == 0 or force then
    for i = 1, n do
      local b = a + (i - 1) * 4
      local cost = tonumber(ARGV[b + 2])
      if cost > 0 then
        local w = tonumber(ARGV[b])
        local cur = math.floor(now * ${SLOTS} / w)
        redis.call('HINCRBY', KEYS[k + i], cur, cost)
        expire(KEYS[k + i], cur, w)
        used[i] = used[i] + cost
      end
    end
  end
  reply[#reply + 1] = refused
  reply[#reply + 1] = math.ceil(retryMs)
  for i = 1, n do reply[#reply + 1] = used[i] end
end

local function add(n)
  for i = 1, n do
    local key = KEYS[k + i]
    local amount = tonumber(ARGV[a + (i - 1) * 2])
    local w = tonumber(ARGV[a + (i - 1) * 2 + 1])
    local cur = math.floor(now * ${SLOTS} / w)
    redis.call('HINCRBY', key, cur, amount)
    expire(key, cur, w)
    -- A hash only answers reach (no take prunes it) is pruned once it holds more slots than count.
    if redis.call('HLEN', key) > ${SLOTS} + 2 then
      for _, field in ipairs(redis.call('HKEYS', key)) do
        if tonumber(field) < cur - ${SLOTS} then redis.call('HDEL', key, field) end
      end
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
    a = a + 4 * n
  else
    a = a + 2
    add(n)
    a = a + 2 * n
  end
  k = k + n
end
return reply
`;
