-- wrk script for chargeonce's POST /v1/charges/{id}/refunds (and the pass-through baseline, which takes the same
-- requests with the PaymentIntent's id in the path: it has no database to find a charge's PaymentIntent in).
-- Arguments after `--`:  mode=new|hot|replay  prefix=<unique run prefix>  key=<API key>  threads=<wrk threads>
--                        pool=<file>  target=svc|pt  amount=<cents>  replay_rows=<N>
--   new     every request is a new refund (a fresh Idempotency-Key) of `amount` cents on a charge of the pool file
--           (one line per charge: "<charge id> <PaymentIntent id>"). Requests go through the charges in turn,
--           interleaved across threads, so that no two requests share a charge until the pool is used up (then it
--           starts again: a second partial refund of each, counted as "wrapped").
--   hot     every request is a new refund of `amount` cents on the same charge as every other request in flight:
--           the pool's line (os.time() mod lines), so all threads move to the next charge at the same second.
--           One charge at a time, not one for the whole run: the Stripe stand-in's refund create scans the
--           PaymentIntent's earlier refunds under one lock (O(n)), which would otherwise cap the run, not the service.
--   replay  every request repeats a finished refund: keys rbulk-<i> on charges chg_rbulk<i, 19 digits>, loaded by
--           bench/sql/bulk_refunds.sql
-- done() prints one JSON line (latencies in microseconds) that bench/run.sh reads.

local threads = {}
local thread_count = 0

function setup(thread)
  thread_count = thread_count + 1
  thread:set("tid", thread_count)
  table.insert(threads, thread)
end

local mode, prefix, api_key, nthreads, target, amount, replay_rows
local pool = {}
local pool_size = 0
local counter = 0
local counts = { s201 = 0, replayed = 0, s400 = 0, s402 = 0, s404 = 0, s409 = 0, s422 = 0, s503 = 0, other = 0, wrapped = 0 }

function init(args)
  local opts = {}
  for _, a in ipairs(args) do
    local k, v = a:match("^([^=]+)=(.*)$")
    if k then opts[k] = v end
  end
  mode = opts.mode or "new"
  prefix = opts.prefix or tostring(os.time())
  api_key = opts.key or "sk_bench_0123456789"
  nthreads = tonumber(opts.threads or "1")
  target = opts.target or "svc"
  amount = opts.amount or "1"
  replay_rows = tonumber(opts.replay_rows or "2000")
  if mode == "new" or mode == "hot" then
    for line in io.lines(opts.pool) do
      local charge, pi = line:match("^(%S+)%s+(%S+)")
      if charge then
        pool_size = pool_size + 1
        pool[pool_size] = target == "pt" and pi or charge
      end
    end
  end
  math.randomseed(os.time() * 1000 + (tid or 0))
  _G.counts = counts
end

local function post(charge, key, body)
  return wrk.format("POST", "/v1/charges/" .. charge .. "/refunds", {
    ["Authorization"] = "Bearer " .. api_key,
    ["Content-Type"] = "application/json",
    ["Idempotency-Key"] = key,
  }, body)
end

function request()
  if mode == "replay" then
    local i = math.random(0, replay_rows - 1)
    return post(string.format("chg_rbulk%019d", i), "rbulk-" .. i, '{"amount":1}')
  end
  counter = counter + 1
  if mode == "hot" then
    return post(pool[os.time() % pool_size + 1], prefix .. "-" .. tid .. "-" .. counter, '{"amount":' .. amount .. '}')
  end
  local index = (counter - 1) * nthreads + (tid - 1)
  if index >= pool_size and pool_size > 1 then counts.wrapped = counts.wrapped + 1 end
  return post(pool[index % pool_size + 1], prefix .. "-" .. tid .. "-" .. counter, '{"amount":' .. amount .. '}')
end

function response(status, headers, body)
  if status == 201 then
    counts.s201 = counts.s201 + 1
    if headers["Idempotent-Replayed"] or headers["idempotent-replayed"] then
      counts.replayed = counts.replayed + 1
    end
  elseif status == 400 then counts.s400 = counts.s400 + 1
  elseif status == 402 then counts.s402 = counts.s402 + 1
  elseif status == 404 then counts.s404 = counts.s404 + 1
  elseif status == 409 then counts.s409 = counts.s409 + 1
  elseif status == 422 then counts.s422 = counts.s422 + 1
  elseif status == 503 then counts.s503 = counts.s503 + 1
  else counts.other = counts.other + 1 end
end

function done(summary, latency, requests)
  local total = { s201 = 0, replayed = 0, s400 = 0, s402 = 0, s404 = 0, s409 = 0, s422 = 0, s503 = 0, other = 0, wrapped = 0 }
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
      .. '"s201":%d,"replayed":%d,"s400":%d,"s402":%d,"s404":%d,"s409":%d,"s422":%d,"s503":%d,"other":%d,"wrapped":%d}\n',
    summary.requests, summary.duration, latency:percentile(50), latency:percentile(90), latency:percentile(99),
    latency:percentile(99.9), latency.max, latency.mean,
    e.connect, e.read, e.write, e.timeout,
    total.s201, total.replayed, total.s400, total.s402, total.s404, total.s409, total.s422, total.s503, total.other,
    total.wrapped))
end
