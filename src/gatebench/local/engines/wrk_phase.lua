-- gatebench's script for wrk 4.1 (LuaJIT): one phase of a gatebench workload document.
--
-- The phase itself is data: GATEBENCH_WRK_PHASE names a Lua file rendered by
-- gatebench.local.engines.wrk (every string in it is escaped byte by byte, so nothing from an API
-- description is ever Lua code). This script only interprets it:
--
--   request()   builds each request from the phase's templates and value generators (the same
--               generators as the Gatling simulation: constant, list, range, random, counter,
--               weighted),
--               so one phase can address many resources ("multi-endpoint");
--   response()  counts responses per status code (OK = in the phase's expect list, or below
--               400 when there is none);
--   done()      writes the phase's result as JSON: wrk's summary, its error counters, the
--               status counts, and wrk's latency histogram bin by bin (1 µs bins: every
--               recorded latency, exactly). wrk has already applied its coordinated-omission
--               correction to that histogram when done() runs; gatebench removes it again
--               (engines/wrk.py), which is why the correction's inputs are written too.
--
-- Secrets (Authorization values, API keys) are never in the data file: it names environment
-- variables, set for this wrk process only.

local ffi = require("ffi")
local bit = require("bit")

ffi.cdef [[
typedef struct { uint64_t count; uint64_t limit; uint64_t min; uint64_t max; uint64_t data[?]; } gatebench_stats;
typedef struct { long tv_sec; long tv_usec; } gatebench_timeval;
int gettimeofday(gatebench_timeval *tv, void *tz);
]]

local phase = dofile(assert(os.getenv("GATEBENCH_WRK_PHASE"), "GATEBENCH_WRK_PHASE is not set"))

-- -- values ------------------------------------------------------------------------------------

local function int_text(v)
  return string.format("%d", v)
end

local thread_id = 0 -- set by setup() through thread:set("gatebench_thread", n)
local threads = phase.threads
local sent = 0 -- requests this thread has built
-- wrk calls request() once on thread 0 right after init() to check the request it builds
-- (script_verify_request): that call is not a request sent, so it takes no request number.
local verifying = false

-- The plan's generators, as every engine computes them (docs/engine.md, "Values"): request g
-- of the phase gets constant; list values[g mod n] (random: values[floor(u * n)]); range
-- low + g mod (high - low + 1); random low + floor(u * (high - low + 1)); counter
-- start + g * step. u is SplitMix64's (g+1)-th output from the state seed XOR fnv1a64(the
-- parameter's name), its top 53 bits over 2^53: the same in loadgen/values.go and the Gatling
-- simulation, in 64-bit unsigned arithmetic (LuaJIT's uint64_t cdata wraps as Go and Java do).
local seed = bit.bor(bit.lshift(ffi.new("uint64_t", phase.seed_hi), 32), ffi.new("uint64_t", phase.seed_lo))
local keys = {}
for name, _ in pairs(phase.params) do
  local h = 0xcbf29ce484222325ULL
  for i = 1, #name do
    h = bit.bxor(h, ffi.new("uint64_t", name:byte(i))) * 0x100000001b3ULL
  end
  keys[name] = h
end

-- SplitMix64's output for the state ``state + (n + 1) * gamma``, its top 53 bits over 2^53
-- (gatebench.core.workload.unit_draw is the reference): the one mixing function of every draw.
local function unit_draw(state, n)
  local z = ffi.cast("uint64_t", state) + (ffi.cast("uint64_t", n) + 1ULL) * 0x9E3779B97F4A7C15ULL
  z = bit.bxor(z, bit.rshift(z, 30)) * 0xBF58476D1CE4E5B9ULL
  z = bit.bxor(z, bit.rshift(z, 27)) * 0x94D049BB133111EBULL
  z = bit.bxor(z, bit.rshift(z, 31))
  return tonumber(bit.rshift(z, 11)) * 2 ^ -53
end

local function unit(name, g)
  return unit_draw(bit.bxor(seed, keys[name]), g)
end

-- A weighted list (gatebench.core.workload.weighted_value is the reference, and the Java and Go
-- engines draw the same): u = unit_draw(the list's own seed, draw), then the first value whose
-- cumulative weight exceeds u * total, or one of the others.

local function weighted(g, n)
  local x = unit_draw(g.seed, g.offset + n * g.stride) * g.total
  local cumulative = g.cumulative
  local low, high = 1, #cumulative + 1
  while low < high do
    local mid = math.floor((low + high) / 2)
    if x < cumulative[mid] then
      high = mid
    else
      low = mid + 1
    end
  end
  local o = g.others
  if low <= #cumulative or o == nil then
    return g.texts[math.min(low, #cumulative)]
  end
  local listed = 0
  if #cumulative > 0 then
    listed = cumulative[#cumulative]
  end
  local j = math.min(math.floor((x - listed) / o.weight * o.count), o.count - 1)
  local number = o.start + j
  if not o.text then
    return number
  end
  local digits = int_text(number)
  if #digits < o.width then
    digits = string.rep("0", o.width - #digits) .. digits
  end
  local texts = {}
  for encoding, head in pairs(o.heads) do
    texts[encoding] = head .. digits .. o.tails[encoding]
  end
  return texts
end

-- One value per parameter per request, as {text by encoding} (constants and lists are
-- rendered by gatebench for every encoding) or a plain integer (ranges, random, counters:
-- an integer reads the same in every encoding).
local function next_values()
  -- thread k of T takes the requests k, k+T, k+2T... of the phase: a counter never repeats
  local g = thread_id + sent * threads
  sent = sent + 1
  local values = {}
  for name, gen in pairs(phase.params) do
    if gen.kind == "constant" then
      values[name] = gen.text
    elseif gen.kind == "list" then
      local at
      if gen.random then
        at = math.floor(unit(name, g) * #gen.texts) + 1
      else
        at = (g % #gen.texts) + 1
      end
      values[name] = gen.texts[at]
    elseif gen.kind == "range" then
      values[name] = gen.low + (g % (gen.high - gen.low + 1))
    elseif gen.kind == "random" then
      values[name] = gen.low + math.floor(unit(name, g) * (gen.high - gen.low + 1))
    elseif gen.kind == "weighted" then
      values[name] = weighted(gen, g)
    else -- counter
      values[name] = gen.start + g * gen.step
    end
  end
  return values
end

local function render(parts, values)
  local out = {}
  for i, part in ipairs(parts) do
    if type(part) == "string" then
      out[i] = part
    else
      local v = values[part.p]
      if type(v) == "table" then
        out[i] = v[part.e]
      else
        out[i] = int_text(v)
      end
    end
  end
  return table.concat(out)
end

-- Generated upload content: not all zeros (so compression cannot cheat), one copy per size.
local generated = {}
local function filler(size)
  if generated[size] == nil then
    local buf = ffi.new("uint8_t[?]", size)
    local x = 0x2545F491
    for i = 0, size - 1 do
      x = bit.bxor(x, bit.lshift(x, 13))
      x = bit.bxor(x, bit.rshift(x, 17))
      x = bit.bxor(x, bit.lshift(x, 5))
      buf[i] = bit.band(x, 0xff)
    end
    generated[size] = ffi.string(buf, size)
  end
  return generated[size]
end

local secret_cache = {}
local function secret(name)
  if secret_cache[name] == nil then
    secret_cache[name] = assert(os.getenv(name), name .. " is not set")
  end
  return secret_cache[name]
end

-- -- requests ----------------------------------------------------------------------------------

local function build_body(values)
  local body = phase.body
  if body.kind == "none" then
    return nil, nil
  elseif body.kind == "template" then
    return render(body.parts, values), body.content_type
  elseif body.kind == "bytes" then
    return filler(body.size), body.content_type
  end
  local out = {}
  for _, part in ipairs(body.parts) do
    out[#out + 1] = part.head
    if part.size ~= nil then
      out[#out + 1] = filler(part.size)
    else
      out[#out + 1] = render(part.parts, values)
    end
    out[#out + 1] = "\r\n"
  end
  out[#out + 1] = body.tail
  return table.concat(out), body.content_type
end

local function build_request()
  local values = next_values()
  local target = { render(phase.path, values) }
  for i, q in ipairs(phase.query) do
    target[#target + 1] = (i == 1 and "?" or "&") .. q.name .. "="
    if q.secret ~= nil then
      target[#target + 1] = secret(q.secret)
    else
      target[#target + 1] = render(q.parts, values)
    end
  end
  local lines = {
    phase.method .. " " .. table.concat(target) .. " HTTP/1.1",
    "Host: " .. phase.host,
    "User-Agent: gatebench",
  }
  for _, h in ipairs(phase.headers) do
    lines[#lines + 1] = h.name .. ": " .. render(h.parts, values)
  end
  for _, h in ipairs(phase.secret_headers) do
    lines[#lines + 1] = h.name .. ": " .. secret(h.env)
  end
  local body, content_type = build_body(values)
  if content_type ~= nil then
    lines[#lines + 1] = "Content-Type: " .. content_type
  end
  if body ~= nil then
    lines[#lines + 1] = "Content-Length: " .. #body
  end
  return table.concat(lines, "\r\n") .. "\r\n\r\n" .. (body or "")
end

function setup(thread)
  thread:set("gatebench_thread", setup_count or 0)
  setup_count = (setup_count or 0) + 1
  all_threads = all_threads or {}
  all_threads[#all_threads + 1] = thread
end

function init(args)
  thread_id = gatebench_thread or 0
  verifying = thread_id == 0
  if phase.static then
    -- every request is the same: hand it to wrk once (wrk.init formats wrk.request from
    -- these fields after init returns), so wrk sends it without calling Lua per request
    local text = build_request()
    local head, body = text:match("^(.-)\r\n\r\n(.*)$")
    local first, rest = head:match("^([^\r\n]*)\r\n(.*)$")
    wrk.method, wrk.path = first:match("^(%S+) (%S+) HTTP/1.1$")
    wrk.headers = {}
    for name, value in rest:gmatch("([^:\r\n]+): ([^\r\n]*)") do
      if name ~= "Content-Length" then
        wrk.headers[name] = value
      end
    end
    wrk.body = body ~= "" and body or nil
  end
end

if not phase.static then
  function request()
    if verifying then
      verifying = false
      local numbered = sent
      local text = build_request()
      sent = numbered
      return text
    end
    return build_request()
  end
end

statuses = {}

function response(status, headers, body)
  statuses[status] = (statuses[status] or 0) + 1
end

-- -- the result --------------------------------------------------------------------------------

local function now_us()
  local tv = ffi.new("gatebench_timeval")
  ffi.C.gettimeofday(tv, nil)
  return tonumber(tv.tv_sec) * 1000000 + tonumber(tv.tv_usec)
end

function done(summary, latency, requests)
  local finished_us = now_us()
  local s = ffi.cast("gatebench_stats**", latency)[0]
  local out = {}
  local function add(text)
    out[#out + 1] = text
  end
  add(string.format('{"format": "gatebench-wrk/1", "finished_us": %d, ', finished_us))
  add(string.format('"duration_us": %d, "requests": %d, "bytes": %d, ',
    summary.duration, summary.requests, summary.bytes))
  local e = summary.errors
  add(string.format('"errors": {"connect": %d, "read": %d, "write": %d, "status": %d, "timeout": %d}, ',
    e.connect, e.read, e.write, e.status, e.timeout))
  add(string.format('"connections": %d, "threads": %d, ', phase.connections, threads))
  -- the stats struct as read through the FFI, and as wrk reports it: they must agree
  local recorded = tonumber(s.count)
  if recorded > 0 then
    add(string.format('"histogram_check": {"ffi_min": %d, "ffi_max": %d, "min": %d, "max": %d, "count": %d, "limit": %d}, ',
      tonumber(s.min), tonumber(s.max), latency.min, latency.max, recorded, tonumber(s.limit)))
  end
  local counts = {}
  for _, t in ipairs(all_threads or {}) do
    for status, n in pairs(t:get("statuses") or {}) do
      counts[status] = (counts[status] or 0) + n
    end
  end
  local parts = {}
  for status, n in pairs(counts) do
    parts[#parts + 1] = string.format("[%d, %d]", status, n)
  end
  add('"statuses": [' .. table.concat(parts, ", ") .. '], ')
  local bins = {}
  if recorded > 0 then
    for v = tonumber(s.min), tonumber(s.max) do
      local c = s.data[v]
      if c ~= 0 then
        bins[#bins + 1] = string.format("[%d, %d]", v, tonumber(c))
      end
    end
  end
  add('"latency_us": [' .. table.concat(bins, ", ") .. "]}\n")
  local fh = assert(io.open(phase.out, "w"))
  fh:write(table.concat(out))
  fh:close()
end
