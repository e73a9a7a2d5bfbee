-- wrk script for chargeonce's POST /v1/charges (and the pass-through baseline, which takes the same requests).
-- Arguments after `--`:  mode=new|replay|mix  prefix=<unique run prefix>  key=<API key>  replay_rows=<N>
--   new     every request is a new payment (a fresh Idempotency-Key)
--   replay  every request repeats a finished payment: keys bulk-<10*i> loaded by bench/sql/bulk_rows.sql
--   mix     89% new, 10% retries of one of this connection's recent keys (same body), 1% reuse of a recent key
--           with another body (must be answered 422)
-- done() prints one JSON line (latencies in microseconds) that bench/run.sh reads.

local threads = {}
local thread_count = 0

function setup(thread)
  thread_count = thread_count + 1
  thread:set("tid", thread_count)
  table.insert(threads, thread)
end

local mode, prefix, api_key, replay_rows
local counter = 0
local recent = {}
local recent_size = 0
local RECENT_MAX = 512
local counts = { s201 = 0, replayed = 0, s402 = 0, s409 = 0, s422 = 0, s503 = 0, other = 0 }

function init(args)
  local opts = {}
  for _, a in ipairs(args) do
    local k, v = a:match("^([^=]+)=(.*)$")
    if k then opts[k] = v end
  end
  mode = opts.mode or "new"
  prefix = opts.prefix or tostring(os.time())
  api_key = opts.key or "sk_bench_0123456789"
  replay_rows = tonumber(opts.replay_rows or "10000")
  math.randomseed(os.time() * 1000 + (tid or 0))
  -- exported to done() through the thread object
  _G.counts = counts
end

local function body_for(amount)
  return '{"amount":' .. amount .. ',"currency":"usd","payment_method":"pm_card_visa"}'
end

local function post(key, body)
  return wrk.format("POST", "/v1/charges", {
    ["Authorization"] = "Bearer " .. api_key,
    ["Content-Type"] = "application/json",
    ["Idempotency-Key"] = key,
  }, body)
end

local function new_payment()
  counter = counter + 1
  local key = prefix .. "-" .. tid .. "-" .. counter
  local amount = 1000 + (counter % 1000)
  if recent_size < RECENT_MAX then
    recent_size = recent_size + 1
    recent[recent_size] = { key, amount }
  else
    recent[math.random(RECENT_MAX)] = { key, amount }
  end
  return post(key, body_for(amount))
end

function request()
  if mode == "replay" then
    -- rows bulk-<10*i> belong to client "bench" (see bulk_rows.sql); the body must match the stored request.
    local i = 10 * math.random(0, replay_rows - 1)
    return post("bulk-" .. i, body_for(1000 + (i % 1000)))
  elseif mode == "mix" and recent_size > 0 then
    local roll = math.random(100)
    if roll <= 10 then
      local r = recent[math.random(recent_size)]
      return post(r[1], body_for(r[2]))
    elseif roll == 11 then
      local r = recent[math.random(recent_size)]
      return post(r[1], body_for(r[2] + 1))
    end
  end
  return new_payment()
end

function response(status, headers, body)
  if status == 201 then
    counts.s201 = counts.s201 + 1
    if headers["Idempotent-Replayed"] or headers["idempotent-replayed"] then
      counts.replayed = counts.replayed + 1
    end
  elseif status == 402 then counts.s402 = counts.s402 + 1
  elseif status == 409 then counts.s409 = counts.s409 + 1
  elseif status == 422 then counts.s422 = counts.s422 + 1
  elseif status == 503 then counts.s503 = counts.s503 + 1
  else counts.other = counts.other + 1 end
end

function done(summary, latency, requests)
  local total = { s201 = 0, replayed = 0, s402 = 0, s409 = 0, s422 = 0, s503 = 0, other = 0 }
  for _, t in ipairs(threads) do
    local c = t:get("counts")
    if c then
      for k, v in pairs(c) do total[k] = total[k] + v end
    end
  end
  local e = summary.errors
  io.write(string.format(
    '{"requests":%d,"duration_us":%d,"p50":%d,"p90":%d,"p99":%d,"p999":%d,"max":%d,"mean":%.1f,'
      .. '"errors_connect":%d,"errors_read":%d,"errors_write":%d,"errors_timeout":%d,'
      .. '"s201":%d,"replayed":%d,"s402":%d,"s409":%d,"s422":%d,"s503":%d,"other":%d}\n',
    summary.requests, summary.duration, latency:percentile(50), latency:percentile(90), latency:percentile(99),
    latency:percentile(99.9), latency.max, latency.mean,
    e.connect, e.read, e.write, e.timeout,
    total.s201, total.replayed, total.s402, total.s409, total.s422, total.s503, total.other))
end
