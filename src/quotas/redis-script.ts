// The window algorithm (window.ts) as Lua, run by Redis (or Valkey) on its own clock: each call is atomic on
// the server, so replicas sharing one Redis never read, decide and write apart (no read-modify-write race).
// A key is one hash: field = slot index, value = what was charged in that slot; it expires when its newest
// slot stops counting.
import { SLOTS } from './window.js';

/**
 * KEYS: the charges' keys. ARGV[1]: '1' to charge even when a key has no room (observe mode); then per key
 * four values: window ms, limit, cost, '1' when it counts requests (fit whole) else bytes (room for one byte).
 * Returns { refused index (1-based, 0: none), retry ms, use of each key }.
 */
export const TAKE_SCRIPT = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local force = ARGV[1] == '1'
local used = {}
local refused = 0
local retryMs = 0
for i = 1, #KEYS do
  local b = 1 + (i - 1) * 4
  local w = tonumber(ARGV[b + 1])
  local limit = tonumber(ARGV[b + 2])
  local cost = tonumber(ARGV[b + 3])
  local whole = ARGV[b + 4] == '1'
  local oldest = math.floor(now * ${SLOTS} / w) - ${SLOTS}
  local flat = redis.call('HGETALL', KEYS[i])
  local u = 0
  local slots = {}
  for j = 1, #flat, 2 do
    local slot = tonumber(flat[j])
    if slot < oldest then
      redis.call('HDEL', KEYS[i], flat[j])
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
    table.sort(slots, function(a, c) return a[1] < c[1] end)
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
  for i = 1, #KEYS do
    local b = 1 + (i - 1) * 4
    local cost = tonumber(ARGV[b + 3])
    if cost > 0 then
      local w = tonumber(ARGV[b + 1])
      local cur = math.floor(now * ${SLOTS} / w)
      redis.call('HINCRBY', KEYS[i], cur, cost)
      redis.call('PEXPIRE', KEYS[i], math.ceil((cur + 1) * w / ${SLOTS} + w - now))
      used[i] = used[i] + cost
    end
  end
end
local reply = { refused, math.ceil(retryMs) }
for i = 1, #KEYS do reply[#reply + 1] = used[i] end
return reply
`;

/**
 * KEYS: the keys answers are charged to (the answers of one event-loop turn, coalesced). ARGV[2i - 1]: key i's
 * bytes; ARGV[2i]: its window ms. A hash that only answers reach (no take prunes it) is pruned here once it
 * holds more slots than count.
 */
export const ADD_SCRIPT = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
for i = 1, #KEYS do
  local amount = tonumber(ARGV[2 * i - 1])
  local w = tonumber(ARGV[2 * i])
  local cur = math.floor(now * ${SLOTS} / w)
  redis.call('HINCRBY', KEYS[i], cur, amount)
  redis.call('PEXPIRE', KEYS[i], math.ceil((cur + 1) * w / ${SLOTS} + w - now))
  if redis.call('HLEN', KEYS[i]) > ${SLOTS} + 2 then
    local flat = redis.call('HKEYS', KEYS[i])
    for _, field in ipairs(flat) do
      if tonumber(field) < cur - ${SLOTS} then redis.call('HDEL', KEYS[i], field) end
    end
  end
end
return 0
`;
