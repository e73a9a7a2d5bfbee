module chargeonce

/*
 * The charge and refund protocol of chargeonce, in Alloy 6 (temporal logic over `var` relations).
 *
 * One step of a trace is one atomic action: one SQL statement (or one transaction) of
 * dev.chargeonce.idempotency.IdempotencyStore together with what its caller does around it, one thing Stripe
 * does, a webhook applied, an operator's action, the database losing its last commits, or time passing.
 * Every action below names the Java method and the SQL statement it stands for; spec/README.md has the table
 * (and ProtocolModelTest checks that the table, this file and IdempotencyStore.java agree).
 *
 * Sections: 0 switches, 1 the row (the database), 2 the actors (drivers, clients, recovery, webhooks, sync,
 * operators), 3 Stripe, 4 the database's losses and time, 5 the statements, 6 the actions, 7 traces,
 * 8 properties and checks.
 *
 * The assumptions the design accepts are stated where they are used, each marked ASSUMPTION.
 */

open util/ordering[Attempt] as attempts
-- Rows, holders, tries and objects are interchangeable until used: each action takes the first free one
-- (symmetry reduction: any other choice is the same trace with the atoms renamed).
open util/ordering[Row] as rows
open util/ordering[Holder] as holders
open util/ordering[Req] as reqs
open util/ordering[Obj] as objs

----------------------------------------------------------------------------------------------------------------
-- 0. SWITCHES: the rules the code had before two double charges were found by reading it. Each check states
--    which switches it assumes; the safety and liveness checks assume none.

-- Before 623bb06: Stripe's metadata carried the row's id (chargeonce_charge_id), the lookup matched the row's
-- id, and an idempotency_error was read as a Stripe 5xx ("unknown, look it up").
lone sig OldKeyRule {}
-- Before 623bb06: any 5xx (Stripe's API or its edge, first-hand or replayed) marked the row, and the next
-- driver listed at once: an empty list was taken as absence, while a request with the key may still run.
lone sig OldAbsenceRule {}
-- A lookup by Stripe's search API (eventually consistent) instead of a list.
lone sig SearchInsteadOfList {}

pred oldRulesOff { no OldKeyRule and no OldAbsenceRule and no SearchInsteadOfList }
pred currentDesign { oldRulesOff and no Dropped }

-- The guards: every condition of a fenced statement's WHERE clause, and every check-then-act, that the design
-- relies on. A mutant of the model drops one (Dropped = that guard) and the safety checks are run against it:
-- spec/README.md's mutation table says, for each, which checks notice and how short the counterexample is, or
-- why the guard is defence in depth. The design drops none. Each is used as `keeps[G] implies <condition>`.
abstract sig Guard {}
one sig
  FinishFence,              -- FINISH: lease_gen = the holder's
  FinishOnProcessing,       -- FINISH: status = 'processing'
  ReleaseFence,             -- RELEASE: lease_gen
  ParkFence,                -- MARK_FOR_RECONCILIATION: lease_gen
  NextAttemptFence,         -- NEXT_STRIPE_ATTEMPT: lease_gen (and the lookup's RENEW_LEASE, moveOn's check)
  NextAttemptOfProvenKey,   -- NEXT_STRIPE_ATTEMPT: stripe_attempt = the attempt the lookup proved empty
  AbsenceProof,             -- moveOn only when the list found nothing of the identity
  HorizonParks,             -- past key-horizon: park, never a next attempt
  SettledBeforeHorizonLook, -- past key-horizon: list only once keySettled
  SendInLease,              -- StripeApi.send: no try once the holder's lease ran out (LeaseSpentException)
  TakeOverExpired,          -- TAKE_OVER: lease_until <= now (the old holders' leases ended first)
  TakeOverOnProcessing,     -- TAKE_OVER, TAKE_OVER_EXPIRED: status = 'processing'
  TakeOverNotParked,        -- TAKE_OVER, TAKE_OVER_EXPIRED: not needs_reconciliation
  FromStripeOnProcessing,   -- FINISH_FROM_STRIPE: status = 'processing' (else ADVANCE_STATE)
  AdvanceForwardOnly,       -- ADVANCE_STATE: the new state ranks above the old, and the old is not final
  AdvanceRefundNotFailed,   -- ADVANCE_STATE: not a refund answered failed (its amount was given back)
  ObjectOwnerByIdentity,    -- LOCK_FOR_OBJECT: by identity only a row that names no object yet
  RefundWithinCharge,       -- claimNewRefund: the amount within what the charge has left
  RefundOfSucceededCharge,  -- claimNewRefund: the charge succeeded
  OperatorOnProcessing,     -- FINISH_BY_OPERATOR: status = 'processing' at the generation the operator saw
  OperatorKeySettled,       -- ABANDON_BY_OPERATOR: no try of the key can still run or be sent
  OperatorListedNothing,    -- OperatorActions.markFailed: the list finds nothing of the identity
  OperatorAttachesItsOwn,   -- OperatorActions.attach: the object carries the row's identity
  RequeueOnProcessing,      -- requeue(): status = 'processing'
  RetentionOnAnswered,      -- DELETE_FINISHED: status <> 'processing'
  RetentionKeepsFollowed,   -- DELETE_FINISHED: not an accepted row whose object is not settled
  RetentionKeepsRefunded    -- DELETE_FINISHED: not a charge with refunds
  extends Guard {}
sig Dropped in Guard {}
pred keeps[g: Guard] { g not in Dropped }

----------------------------------------------------------------------------------------------------------------
-- Values

abstract sig Status {}                              -- stripe_intents.status, stripe_refunds.status
one sig Processing, Completed, Failed, Accepted extends Status {}

abstract sig PState {}                              -- a PaymentIntent's or refund's state at Stripe
-- Pend: requires_action / processing (a charge), pending (a refund); Fail: a decline (requires_payment_method
-- with an error) or a failed refund; Succ: succeeded; Canc: canceled.
one sig Pend, Fail, Succ, Canc extends PState {}

abstract sig Mark {}                                -- last_stripe_error
one sig ServerError, HistoryUnknown extends Mark {}  -- ClaimedIntent.SERVER_ERROR, OperationDriver.HISTORY_UNKNOWN

abstract sig Lookup {}                              -- the lookup a driver is doing (OperationDriver)
one sig InWindow, InHistory, PastHorizon extends Lookup {}  -- lookUpThenMoveOn, searchUnknownHistory, resolvePastHorizon

sig Body {}                                         -- a request body (its fingerprint)
sig Attempt {}                                      -- stripe_attempt

fun chargeAmount: Int { 2 }                         -- every charge is of 2 units in the model

----------------------------------------------------------------------------------------------------------------
-- 1. THE ROW

-- A client's key: (client_id, Idempotency-Key), for a charge or a refund. Its Stripe identity
-- (StripeKeys.identity / refundIdentity) is a function of it, and so is every Stripe key: (key, attempt)
-- (StripeKeys.ofIdentity: "chargeonce-<identity>-a<attempt>", from the row's stored identity). Stripe's memory of those keys lives here too.
abstract sig Key {
  var kres: Attempt -> lone Outcome,    -- Stripe: the answer it stored for the key (key, attempt)
  var kpar: Attempt -> lone Row,        -- Stripe: the parameters the key was first executed with (the sender's)
  var forgotten: set Attempt,           -- Stripe: keys it forgot (older than 24 h)
  var told201: set Obj                  -- 201 answers its client got, by the object they name
}
sig ChargeKey extends Key {}
sig RefundKey extends Key {
  charge: one Row,                      -- POST /v1/charges/{id}/refunds: the charge row the path names
  amount: one Int                       -- the refund's amount
}
var sig ToldNothing in Key {}           -- its client was told that nothing was made (400 without an object)
var sig Retired in Key {}               -- retention deleted its row; its client does not retry it any more

-- A row of stripe_intents (a charge) or stripe_refunds (a refund). Row atoms are row ids: random, never
-- inserted twice. `status` is empty while no such row is in the database.
sig Row {
  key: one Key,                         -- client_id, idempotency_key (the unique index)
  body: one Body,                       -- fingerprint, request
  var status: lone Status,
  var owner: lone Holder,               -- lease_gen: the holder whose lease generation is the row's (none:
                                        -- an event or an operator moved it on); every holder write is fenced by it
  var attempt: lone Attempt,            -- stripe_attempt: picks the Stripe key
  var mark: lone Mark,                  -- last_stripe_error
  var obj: lone Obj,                    -- payment_intent_id / stripe_refund_id
  var state: lone PState,               -- charge_status / refund_status
  var reserved: lone Int,               -- amount_reserved (charges): pending and succeeded refunds
  -- stripe_key_last_sent and stripe_sending_until, by which sends they cover (see `settledNow`):
  var bound: lone Holder,               -- the holder whose lease stripe_sending_until was set for
  var foldedH: set Holder,              -- holders whose sends, past and future, stripe_key_last_sent covers
  var early: set Obj,                   -- objects Stripe had when stripe_key_first_sent was set (window start)
  var earlyC: set Obj,                  -- objects Stripe had at created_at
}
var sig Used in Row {}                  -- ids inserted so far
var sig Parked in Row {}                -- needs_reconciliation
var sig Aged in Row {}                  -- beyond_horizon: now - stripe_key_first_sent > key-horizon
var sig HeldByDeleted in Row {}         -- model only: refund rows retention deleted while they held their amount

fun live: set Row { status.Status }
fun newRow[k: Key, b: Body]: lone Row { rows/min[(Row - Used) & key.k & body.b] }
fun rowOf[k: Key]: set Row { live & key.k }          -- at most one: the unique index (checked below)
fun chargeRowOf[d: Row]: set Row { d.key.charge }    -- a refund row's charge row (none for a charge)

----------------------------------------------------------------------------------------------------------------
-- 2. THE ACTORS
--
-- A holder is a thread that drives rows: a request driver (ChargeService / RefundService: a client waits
-- for its answer, HClient) or the recovery worker of an instance (RecoveryWorker). Any number of them run on
-- any number of instances; each may crash at any step, be slow, or lose its lease. What a holder knows is
-- what it read when it got the lease (ClaimedIntent), not the row as it is now.
sig Holder {
  var hrow: lone Row,                   -- the row it drives (none: idle)
  var hatt: lone Attempt,               -- ClaimedIntent.stripeAttempt
  var hmark: lone Mark,                 -- ClaimedIntent.lastStripeError
  var hreq: lone Req,                   -- the try it waits for (StripeApi.create / createRefund)
  var hlook: lone Lookup                -- the lookup it is doing
}
var sig HValid in Holder {}             -- its lease has not run out by its own clock (sendBefore)
var sig HAged in Holder {}              -- ClaimedIntent.keyBeyondHorizon
var sig HSettled in Holder {}           -- ClaimedIntent.keySettled(request-max-duration) at the takeover
var sig HClient in Holder {}            -- a client waits for its answer (else: the recovery worker)

fun idle: set Holder { Holder - hrow.Row }
fun firstIdle: lone Holder { holders/min[idle] }

-- Retrying clients are the claims (ClaimCharge, ClaimRefund): any number, at any time, for any key, with
-- the same body or another one. The webhook applier (Deliver), the sync worker (SyncLook, SyncCancel) and
-- the operators (OpAttach, OpMarkFailed, OpRequeue) act on rows directly, each in one transaction.

----------------------------------------------------------------------------------------------------------------
-- 3. STRIPE

-- What Stripe answers a create.
abstract sig Reply {}
abstract sig Outcome extends Reply {}                -- what Stripe stores for a key once it executed it
one sig Err500 extends Outcome {}                    -- a 5xx from Stripe's API (stored, replayed)
one sig Rej400 extends Outcome {}                    -- refused (invalid request, amount too large): stored
one sig InUse409, IdemErr extends Reply {}           -- 409 idempotency_key_in_use, idempotency_error
-- (A 429, a refused connection, a breaker that is open: the try never ran at Stripe: a Drop, then the
-- holder gives up on it and releases; OperationDriver answers NotSent or Unknown the same way.)

-- A PaymentIntent or a refund. Its static fields are those of the create that made it.
sig Obj extends Outcome {
  okey: one Key,                        -- the chargeonce_key metadata (its identity)
  oatt: one Attempt,                    -- chargeonce_attempt
  orow: one Row,                        -- the row that sent it (the old chargeonce_charge_id metadata)
  born: one PState,                     -- its state in the create's answer (what a replay says)
  ofPI: lone Obj,                       -- a refund's PaymentIntent
  var ostate: lone PState,              -- its state now
  var pend: set PState                  -- webhook events about it (one per state) not delivered yet
}
var sig Made in Obj {}                  -- the objects Stripe has
var sig Indexed in Obj {}               -- those its search API already finds (search lags; lists do not)

-- A try of a create: one HTTP request with an idempotency key. It may reach Stripe's API or not, run there
-- for a while after its sender gave up, and its reply may never reach the sender.
sig Req {
  var rkey: lone Key,                   -- the Stripe key: (rkey, ratt)
  var ratt: lone Attempt,
  var rrow: lone Row,                   -- the sending row (its parameters: its body; its id under OldKeyRule)
  var rfrom: lone Holder,
  var reply: lone Reply                 -- its reply, on its way back to the sender
}
var sig Inflight in Req {}              -- sent, not at Stripe's API yet
var sig Running in Req {}               -- Stripe executes it
var sig Replayed in Req {}              -- its reply is a replay (Idempotent-Replayed: true)
var sig AnsweredEarly in Req {}         -- it got its 500 while its execution goes on
-- what the database's stripe_key_last_sent / stripe_sending_until know about it:
var sig Covered, Under in Req {}

fun busy: set Req { Inflight + Running }
fun freeReqs: set Req { Req - busy - Holder.hreq }
fun nextReq: lone Req { reqs/min[freeReqs] }

-- ASSUMPTION (Stripe's idempotency): a key's first request to reach the API executes; while it runs, others
-- get 409; after it, the stored answer is replayed (for a 500 too); other parameters get idempotency_error.
-- A replayed 5xx proves that the key's one execution is over; a first-hand 500 does not (the execution may
-- still make its object). Stripe forgets a key only after 24 h.
pred sameParams[r1, r2: Row] {
  some OldKeyRule implies r1 = r2      -- the row's id went to Stripe
  else r1.body = r2.body                -- OperationDriver: everything sent is a function of (client, key, request)
}

-- Lookups (StripeGateway.findPaymentIntent / findRefund: a list, read to its end; a list is consistent).
fun findable[r: Row]: set Obj {
  Made & (some OldKeyRule => orow.r else okey.(r.key))
       & (some SearchInsteadOfList => Indexed else Obj)
}

----------------------------------------------------------------------------------------------------------------
-- The order of a Stripe state (Operation.ranks): a charge: requires_action/processing < failed <
-- succeeded | canceled; a refund: requires_action/pending < succeeded < failed | canceled. No state is below all.
fun below[k: Key]: PState -> PState {
  k in ChargeKey => (Pend -> (Fail + Succ + Canc) + Fail -> (Succ + Canc))
  else (Pend -> (Succ + Fail + Canc) + Succ -> (Fail + Canc))
}
pred rises[k: Key, now: lone PState, next: PState] { no now or now -> next in below[k] }
fun finals[k: Key]: set PState { k in ChargeKey => Succ + Canc else Fail + Canc }
fun settledStates[k: Key]: set PState { k in ChargeKey => Succ + Canc else Succ + Fail + Canc }

-- The key's final answer for an object in state s (ChargeOutcomes.finalAnswer, RefundResponses.finalAnswer):
-- succeeded 201 completed; requires_action / processing / pending 202 (a refund 201) accepted; declined,
-- failed or canceled: 402 failed.
fun answerFor[s: PState]: Status { s = Succ => Completed else s = Pend => Accepted else Failed }

----------------------------------------------------------------------------------------------------------------
-- 4. TIME: what the timestamps of a row and of Stripe's requests mean, as the model sees them.
--
-- ClaimedIntent.keySettled: stripe_key_last_sent + request-max-duration <= now. stripe_key_last_sent holds the
-- latest send of the key that the database knows about: reported by a holder when it lets go (RELEASE), or
-- bounded by a holder's lease (stripe_sending_until, folded in by the next takeover: NEW_HOLDER). So it
-- covers a request if the request's holder released the row after sending it (Covered), or if the request
-- was sent under a lease whose bound was folded in (Under, then Covered at the fold), or if its holder's bound
-- was folded in already and the request came later (foldedH: last_sent is then in the future).
-- ASSUMPTION: a Stripe request runs at most request-max-duration after it was sent. So once "now" is past
-- stripe_key_last_sent + request-max-duration, no request it covers is at Stripe any more. Requests it
-- does not cover (a holder's own in-flight tries under its lease; tries of a row the database lost) say nothing.
pred settledNow[r: Row] {
  no q: busy & rrow.r & ratt.(r.attempt) | q in Covered
  no r.foldedH & HValid & hrow.r
}

----------------------------------------------------------------------------------------------------------------
-- Frame conditions: what an action leaves alone.

pred keepRow[r: Row] {
  r.status' = r.status and r.owner' = r.owner and r.attempt' = r.attempt and r.mark' = r.mark
  r.obj' = r.obj and r.state' = r.state and r.reserved' = r.reserved
  r.bound' = r.bound and r.foldedH' = r.foldedH and r.early' = r.early and r.earlyC' = r.earlyC
  (r in Used' iff r in Used)
  (r in Parked' iff r in Parked) and (r in Aged' iff r in Aged)
}
-- column groups, for the statements below
pred sameAnswer[r: Row] { r.status' = r.status and r.obj' = r.obj and r.state' = r.state }
pred sameWindow[r: Row] {
  r.attempt' = r.attempt and r.early' = r.early and r.earlyC' = r.earlyC and (r in Aged' iff r in Aged)
}
pred sameRest[r: Row] {
  (r in Used' iff r in Used) and (r in Parked' iff r in Parked) and r.reserved' = r.reserved
}
pred keepRowButMoney[r: Row] {
  r.status' = r.status and r.owner' = r.owner and r.attempt' = r.attempt and r.mark' = r.mark
  r.obj' = r.obj and r.state' = r.state
  r.bound' = r.bound and r.foldedH' = r.foldedH and r.early' = r.early and r.earlyC' = r.earlyC
  (r in Used' iff r in Used)
  (r in Parked' iff r in Parked) and (r in Aged' iff r in Aged)
}


pred keepHolder[h: Holder] {
  h.hrow' = h.hrow and h.hatt' = h.hatt and h.hmark' = h.hmark
  h.hreq' = h.hreq and h.hlook' = h.hlook
  (h in HValid' iff h in HValid) and (h in HAged' iff h in HAged)
  (h in HSettled' iff h in HSettled) and (h in HClient' iff h in HClient)
}

pred keepReq[q: Req] {
  q.rkey' = q.rkey and q.ratt' = q.ratt and q.rrow' = q.rrow and q.rfrom' = q.rfrom and q.reply' = q.reply
  (q in Inflight' iff q in Inflight) and (q in Running' iff q in Running)
  (q in Replayed' iff q in Replayed) and (q in AnsweredEarly' iff q in AnsweredEarly)
}
-- coverage flags: they matter only while a request is busy (see settledNow)
pred keepCoverage[q: Req] {
  (q in Covered' iff q in Covered) and (q in Under' iff q in Under)
}

pred keepStripeKey[k: Key] { k.kres' = k.kres and k.kpar' = k.kpar and k.forgotten' = k.forgotten }
pred keepClient[k: Key] {
  k.told201' = k.told201 and (k in ToldNothing' iff k in ToldNothing) and (k in Retired' iff k in Retired)
}

pred keepObj[o: Obj] {
  o.ostate' = o.ostate and o.pend' = o.pend and (o in Made' iff o in Made) and (o in Indexed' iff o in Indexed)
}

-- What an action touches: every atom outside these sets is left alone (fact `frames`, stated once for all
-- actions); an action spells out the changes of the atoms it names.
var sig TR in Row {}
var sig TH in Holder {}
var sig TQ in Req {}
var sig TK in Key {}
var sig TO in Obj {}
var sig TC in Req {}                  -- busy requests whose coverage flags change

pred frame[R: set Row, H: set Holder, Q: set Req, K: set Key, O: set Obj] {
  TR = R and TH = H and TQ = Q and TK = K and TO = O
}
pred coverage[changed: set Req] { TC = changed }

fact frames {
  always {
    all r: Row - TR | keepRow[r]
    all h: Holder - TH | keepHolder[h]
    all q: Req - TQ | keepReq[q]
    all k: Key - TK | keepStripeKey[k] and keepClient[k]
    all o: Obj - TO | keepObj[o]
    all q: busy - TC | keepCoverage[q]
  }
}

----------------------------------------------------------------------------------------------------------------
-- 5. THE STATEMENTS of IdempotencyStore on stripe_intents / stripe_refunds, one predicate each, with every
--    column they set; a statement's WHERE clause is its precondition. They constrain the row only; the
--    actions (section 6) add what the caller does around them.

-- CLAIM, CLAIM_REFUND: INSERT … ON CONFLICT (client_id, idempotency_key) DO NOTHING (the row it inserted).
pred sqlInsert[r: Row, h: Holder] {
  r not in Used and r in Used'
  r.status' = Processing and r.owner' = h
  r.attempt' = attempts/first and no r.mark' and no r.obj' and no r.state'
  r.key in ChargeKey implies r.reserved' = 0 else no r.reserved'
  r.bound' = h and no r.foldedH'                 -- stripe_sending_until = now + lease; last_sent NULL
  r.early' = Made and r.earlyC' = Made           -- stripe_key_first_sent, created_at = now
  r not in Parked' and r not in Aged'
}

-- TAKE_OVER, TAKE_OVER_EXPIRED (NEW_HOLDER): a new lease generation once the lease expired
-- (lease_until <= now: time may always pass; the holders of the old lease saw it end first, see takeOverAndDrive).
pred sqlTakeOver[r: Row, h: Holder] {
  r in live and (keeps[TakeOverOnProcessing] implies r.status = Processing)
  keeps[TakeOverNotParked] implies r not in Parked
  r.owner' = h                                   -- lease_gen + 1: the new holder's generation
  -- stripe_key_last_sent = greatest(stripe_key_last_sent, stripe_sending_until): the bound of the previous
  -- lease is folded in (its holder's sends, past and future, are covered); the new lease sets its own bound
  r.bound' = h and r.foldedH' = (r.foldedH + r.bound) - h
  r.mark' = r.mark and sameAnswer[r] and sameWindow[r] and sameRest[r]
}
-- ... and what the fold does to the row's requests
pred foldSends[r: Row] {
  all q: busy & rrow.r {
    (q in Covered' iff (q in Covered or q in Under)) and q not in Under'
  }
}

-- RELEASE: the holder lets go, reporting its sends (stripe_key_last_sent) and maybe a 5xx it received.
pred releaseMatches[r: Row, h: Holder] { r.status = Processing and (keeps[ReleaseFence] implies r.owner = h) }
pred sqlRelease[r: Row, h: Holder, m: lone Mark] {
  releaseMatches[r, h]
  r.mark' = (some m => m else r.mark)            -- coalesce(?, last_stripe_error)
  no r.bound' and r.foldedH' = r.foldedH         -- stripe_sending_until = NULL
  r.owner' = r.owner and sameAnswer[r] and sameWindow[r] and sameRest[r]
}
pred releaseSends[r: Row, h: Holder] {
  all q: busy & rrow.r {
    (q in Covered' iff (q in Covered or (q in Under and q.rfrom = h))) and q not in Under'
  }
}

-- FINISH: the key's final answer, fenced by the holder's generation.
pred finishMatches[r: Row, h: Holder] {
  r in live and (keeps[FinishOnProcessing] implies r.status = Processing) and (keeps[FinishFence] implies r.owner = h)
}
pred sqlFinish[r: Row, h: Holder, st: Status, o: lone Obj, ps: lone PState] {
  finishMatches[r, h]
  r.status' = st and r.obj' = (some o => o else r.obj) and r.state' = ps
  no r.mark' and no r.bound'                     -- last_stripe_error, stripe_sending_until NULL
  r.owner' = r.owner and r.foldedH' = r.foldedH and sameWindow[r] and sameRest[r]
}

-- NEXT_STRIPE_ATTEMPT: the next Stripe key, once the current one is proven to have made nothing.
pred nextAttemptMatches[r: Row, h: Holder] {
  r.status = Processing and (keeps[NextAttemptFence] implies r.owner = h)
  keeps[NextAttemptOfProvenKey] implies r.attempt = h.hatt
}
pred sqlNextAttempt[r: Row, h: Holder] {
  nextAttemptMatches[r, h] and some r.attempt.(attempts/next)
  r.attempt' = r.attempt.(attempts/next)
  r.early' = Made and r not in Aged'             -- stripe_key_first_sent = now
  no r.foldedH'                                  -- stripe_key_last_sent = NULL
  r.bound' = h                                   -- lease_until, stripe_sending_until: renewed for the holder
  no r.mark'
  r.owner' = r.owner and sameAnswer[r] and r.earlyC' = r.earlyC and sameRest[r]
}

-- MARK_FOR_RECONCILIATION: parked for an operator.
pred parkMatches[r: Row, h: Holder] { r.status = Processing and (keeps[ParkFence] implies r.owner = h) }
pred sqlPark[r: Row, h: Holder] {
  parkMatches[r, h]
  r in Parked' and no r.bound'                   -- lease_until = now, stripe_sending_until = NULL
  r.owner' = r.owner and r.mark' = r.mark and r.foldedH' = r.foldedH and sameAnswer[r] and sameWindow[r]
  (r in Used' iff r in Used) and r.reserved' = r.reserved
}
pred dropSends[r: Row] {      -- stripe_sending_until = NULL without a report: the bound is gone
  all q: busy & rrow.r {
    (q in Covered' iff q in Covered) and q not in Under'
  }
}

-- ADVANCE_STATE: an answered row follows its object's state, forward only and never out of a final state.
pred advanceMatches[r: Row, s: PState] {
  r in live and r.status != Processing
  -- a refund answered "failed" gave its amount back already
  keeps[AdvanceRefundNotFailed] implies (r.key in RefundKey implies r.status != Failed)
  keeps[AdvanceForwardOnly] implies (r.state not in finals[r.key] and rises[r.key, r.state, s])
}
pred sqlAdvanceState[r: Row, o: Obj, s: PState] {
  advanceMatches[r, s]
  r.state' = s and r.obj' = (some r.obj => r.obj else o)  -- coalesce({o}, ?)
  r.status' = r.status and r.owner' = r.owner and r.mark' = r.mark and r.bound' = r.bound
  r.foldedH' = r.foldedH and sameWindow[r] and sameRest[r]
}

-- FINISH_FROM_STRIPE: an event (or the sync worker) finishes a row still processing, fencing out its holder.
pred fromStripeMatches[r: Row] { r in live and (keeps[FromStripeOnProcessing] implies r.status = Processing) }
pred sqlFinishFromStripe[r: Row, st: Status, o: Obj, ps: PState] {
  fromStripeMatches[r]
  no r.owner' and r.status' = st and r.obj' = o and r.state' = ps
  no r.mark' and no r.bound'
  r.foldedH' = r.foldedH and sameWindow[r] and sameRest[r]
}

-- FINISH_BY_OPERATOR: the same, fenced by the generation the operator saw, and out of reconciliation.
pred operatorMatches[r: Row] { r in live and (keeps[OperatorOnProcessing] implies r.status = Processing) }
pred sqlFinishByOperator[r: Row, st: Status, o: lone Obj, ps: lone PState] {
  operatorMatches[r]
  no r.owner' and r.status' = st and r.obj' = (some o => o else r.obj) and r.state' = ps
  no r.mark' and no r.bound' and r not in Parked'
  r.foldedH' = r.foldedH and sameWindow[r] and (r in Used' iff r in Used) and r.reserved' = r.reserved
}

-- requeue(): UPDATE … SET needs_reconciliation = false, lease_gen = lease_gen + 1, lease_until = now.
pred sqlRequeue[r: Row] {
  r in live and (keeps[RequeueOnProcessing] implies r.status = Processing)
  r not in Parked' and no r.owner'
  r.mark' = r.mark and r.bound' = r.bound and r.foldedH' = r.foldedH and sameAnswer[r] and sameWindow[r]
  (r in Used' iff r in Used) and r.reserved' = r.reserved
}

-- RESERVE (in claimNewRefund's transaction, after LOCK_CHARGE_FOR_REFUND ... FOR UPDATE and KEY_CLAIMED).
pred sqlReserve[c: Row, amount: Int] {
  c.reserved' = plus[c.reserved, amount] and keepRowButMoney[c]
}

-- REFUND_RELEASE (the {release} of FINISH, FINISH_FROM_STRIPE, FINISH_BY_OPERATOR, ADVANCE_STATE): a refund
-- that ended or moved without refunding (failed; or its state failed/canceled) gives its amount back, in the
-- same statement. For a charge row it is empty.
pred moneyBack[d: Row] {
  d.key in RefundKey implies {
    let c = chargeRowOf[d] {
      (d.status' = Failed or d.state' in Fail + Canc)
        implies c.reserved' = minus[c.reserved, d.key.amount] else c.reserved' = c.reserved
      keepRowButMoney[c]
    }
  }
}

-- DELETE_FINISHED (RetentionJob): a finished row past the retention is deleted.
pred sqlDeleteFinished[r: Row] {
  r in live and (keeps[RetentionOnAnswered] implies r.status != Processing)
  -- its object is still followed
  keeps[RetentionKeepsFollowed] implies not (r.status = Accepted and r.state not in settledStates[r.key])
  -- a charge with refunds is kept
  keeps[RetentionKeepsRefunded] implies (r.key in ChargeKey implies no live & key.(charge.r))
  no r.status' and no r.owner' and no r.attempt' and no r.mark' and no r.obj' and no r.state'
  no r.reserved' and no r.bound' and no r.foldedH' and no r.early' and no r.earlyC'
  r not in Parked' and r not in Aged' and r in Used'
}

----------------------------------------------------------------------------------------------------------------
-- 6. THE ACTIONS

---- what a client is told (the answers that matter for the properties)
pred told[k: Key, st: Status, o: lone Obj] {
  k.told201' = (st = Completed => k.told201 + o else k.told201)
  k in ToldNothing' iff (k in ToldNothing or (st = Failed and no o))
  k in Retired' iff k in Retired
}
pred answer[h: Holder, k: Key, st: Status, o: lone Obj] {
  h in HClient implies told[k, st, o] else keepClient[k]
}
-- OperationDriver.answerOfRow: the lease was lost: answer what the row holds (ANSWER_OF), never one's own view
pred answerOfRow[h: Holder, r: Row] {
  (r in live and r.status != Processing) implies answer[h, r.key, r.status, r.obj] else keepClient[r.key]
}

---- holders
pred becomeIdle[h: Holder] {
  no h.hrow' and no h.hatt' and no h.hmark' and no h.hreq' and no h.hlook'
  h not in HValid' and h not in HAged' and h not in HSettled' and h not in HClient'
}
-- the lease a holder got from the statement of this step (ClaimedIntent from the row it returned)
pred holdView[h: Holder, r: Row] {
  h.hrow' = r and h.hatt' = r.attempt' and h.hmark' = r.mark'
  h in HValid' and (h in HAged' iff r in Aged')
  h in HSettled' implies after settledNow[r]     -- keySettled: only if it can be true by the clock
}

-- StripeApi.send: a try, only inside the holder's lease; its key and parameters come from the row's key and
-- request alone (StripeKeys.ofIdentity, PaymentOrder / RefundOrder).
pred newTry[h: Holder, r: Row, a: Attempt, q: Req] {
  q in freeReqs and (keeps[SendInLease] implies h in HValid')
  q in Inflight' and q not in Running' and q not in Replayed' and q not in AnsweredEarly'
  q.rkey' = r.key and q.ratt' = a and q.rrow' = r and q.rfrom' = h and no q.reply'
  -- what stripe_key_last_sent / stripe_sending_until will know of it
  (q in Under' iff h = r.bound') and (q in Covered' iff h in r.foldedH')
}

-- OperationDriver.drive: what a new holder does first.
pred looksFirst[h: Holder, r: Row] {
  r.mark' = HistoryUnknown or r in Aged'
  or (r.mark' = ServerError and (h in HSettled' or some OldAbsenceRule))
}
pred startLooking[h: Holder, r: Row] {
  h.hlook' = (r.mark' = HistoryUnknown => InHistory else r in Aged' => PastHorizon else InWindow)
  no h.hreq'
}

-- The holders of a lease: their own clocks say it has not run out.
fun leaseHolders[r: Row]: set Holder { HValid & r.owner & hrow.r }

-- A takeover, and the first thing its holder does (one step: the holder sends, or starts a lookup). The
-- lease it takes over has run out: by its holders' clocks first (they send no more tries).
pred takeOverAndDrive[h: Holder, r: Row] {
  sqlTakeOver[r, h] and holdView[h, r]
  all o: leaseHolders[r] | keeps[TakeOverExpired] implies lostLease[o] else keepHolder[o]
  looksFirst[h, r] implies {
    startLooking[h, r] and foldSends[r] and coverage[busy & rrow.r]
    frame[r, h + leaseHolders[r], none, none, none]
  } else {
    let q = nextReq {
      some q and no h.hlook' and h.hreq' = q and newTry[h, r, r.attempt', q]
      foldSends[r] and coverage[busy & rrow.r]
      frame[r, h + leaseHolders[r], q, none, none]
    }
  }
}
pred lostLease[h: Holder] {
  h not in HValid'
  h.hrow' = h.hrow and h.hatt' = h.hatt and h.hmark' = h.hmark
  h.hreq' = h.hreq and h.hlook' = h.hlook
  (h in HAged' iff h in HAged) and (h in HSettled' iff h in HSettled) and (h in HClient' iff h in HClient)
}

-- ChargeService.charge → IdempotencyStore.claim (PEEK: the existing row; none: CLAIM, the inserted row, or
-- nothing when a concurrent claim inserted it first, and PEEK again; an expired lease: answerOrTakeOver →
-- TAKE_OVER) → OperationDriver.answer / drive.
pred ClaimCharge[k: ChargeKey, b: Body] {
  some idle and k not in Retired
  let h = firstIdle |
  no rowOf[k] implies claimNew[h, k, b, none] else claimExisting[h, rowOf[k], b]
}

-- RefundService.refund → IdempotencyStore.claimRefund: PEEK; a new key: one transaction (claimNewRefund):
-- LOCK_CHARGE_FOR_REFUND (FOR UPDATE), KEY_CLAIMED, the charge succeeded and the amount within what is left,
-- CLAIM_REFUND, RESERVE; an existing key: answerOrTakeOver.
pred ClaimRefund[f: RefundKey, b: Body] {
  some idle and f not in Retired
  let h = firstIdle |
  some rowOf[f] implies claimExisting[h, rowOf[f], b]
  else let c = f.charge {
    c in live
    keeps[RefundOfSucceededCharge] implies (some c.obj and (c.state = Succ or (no c.state and c.status = Completed)))
    -- else 400 amount_too_large: nothing stored
    keeps[RefundWithinCharge] implies f.amount <= minus[chargeAmount, c.reserved]
    claimNew[h, f, b, c]
  }
}

-- the INSERT took the key: a new row, and its first try
pred claimNew[h: Holder, k: Key, b: Body, c: lone Row] {
  -- ASSUMPTION: a row the database lost is claimed again (if ever) before Stripe forgets its key
  attempts/first not in k.forgotten
  let r = newRow[k, b], q = nextReq {
    some r and some q
    sqlInsert[r, h] and (some c implies sqlReserve[c, k.amount])
    holdView[h, r] and h in HClient' and no h.hlook' and h.hreq' = q
    newTry[h, r, attempts/first, q] and coverage[none]
    frame[r + c, h, q, none, none]
  }
}

-- the key has a row: answerOrTakeOver / classifyExisting
pred claimExisting[h: Holder, r: Row, b: Body] {
  r.body = b                     -- (another body: 422, nothing changes)
  r.status != Processing implies {
    -- Claim.Replay: the stored answer, byte for byte
    told[r.key, r.status, r.obj] and keepStripeKey[r.key]
    frame[none, none, none, r.key, none] and coverage[none]
  } else {
    -- (parked: 503 under reconciliation; a live lease: 409; nothing changes) an expired lease: TAKE_OVER
    keeps[TakeOverNotParked] implies r not in Parked
    takeOverAndDrive[h, r] and h in HClient'
  }
}

-- RecoveryWorker.recoverOnce: TAKE_OVER_EXPIRED (FOR UPDATE SKIP LOCKED) on any instance, then drive.
pred Recover[r: Row] {
  some idle and r in live and (keeps[TakeOverOnProcessing] implies r.status = Processing)
  keeps[TakeOverNotParked] implies r not in Parked
  let h = firstIdle | takeOverAndDrive[h, r] and h not in HClient'
}

---- what a holder does with a try's reply (OperationDriver.send / settle / StripeOutcomes.ofFailure classification)

-- the reply is read: the request is done with for its holder
pred consumed[q: Req] {
  no q.reply'
  q.rkey' = q.rkey and q.ratt' = q.ratt and q.rrow' = q.rrow and q.rfrom' = q.rfrom
  (q in Inflight' iff q in Inflight) and (q in Running' iff q in Running)
  (q in Replayed' iff q in Replayed) and (q in AnsweredEarly' iff q in AnsweredEarly)
}

-- FINISH, or (fenced out) the row's answer
pred finishOrFenced[h: Holder, r: Row, st: Status, o: lone Obj, ps: lone PState, q: set Req] {
  becomeIdle[h] and keepStripeKey[r.key]
  finishMatches[r, h] implies {
    sqlFinish[r, h, st, o, ps] and moneyBack[r] and answer[h, r.key, st, (some o => o else r.obj)]
    coverage[none] and frame[r + chargeRowOf[r], h, q, r.key, none]
  } else {
    answerOfRow[h, r] and coverage[none] and frame[none, h, q, r.key, none]
  }
}

-- RELEASE (the answer is a 503: not cached), or (fenced out) the row's answer
pred releaseOrFenced[h: Holder, r: Row, m: lone Mark, q: set Req] {
  becomeIdle[h] and keepStripeKey[r.key]
  releaseMatches[r, h] implies {
    sqlRelease[r, h, m] and releaseSends[r, h] and coverage[busy & rrow.r] and keepClient[r.key]
    frame[r, h, q, none, none]
  } else {
    answerOfRow[h, r] and coverage[none] and frame[none, h, q, r.key, none]
  }
}

-- MARK_FOR_RECONCILIATION (503 under reconciliation), or (fenced out) the row's answer
pred parkOrFenced[h: Holder, r: Row, q: set Req] {
  becomeIdle[h] and keepStripeKey[r.key]
  parkMatches[r, h] implies {
    sqlPark[r, h] and dropSends[r] and coverage[busy & rrow.r] and keepClient[r.key]
    frame[r, h, q, none, none]
  } else {
    answerOfRow[h, r] and coverage[none] and frame[none, h, q, r.key, none]
  }
}

-- @Retry: the same key again (a dropped connection, a timeout, 409, an edge 5xx) while the lease allows
pred resend[h: Holder, q: set Req] {
  keeps[SendInLease] implies h in HValid
  let q2 = nextReq {
    some q2 and newTry[h, h.hrow, h.hatt, q2] and h.hreq' = q2
    h.hrow' = h.hrow and h.hatt' = h.hatt and h.hmark' = h.hmark and h.hlook' = h.hlook
    (h in HValid' iff h in HValid) and (h in HAged' iff h in HAged)
    (h in HSettled' iff h in HSettled) and (h in HClient' iff h in HClient)
    coverage[none] and frame[none, h, q + q2, none, none]
  }
}

-- the next step of a lookup (in the same drive)
pred lookNext[h: Holder, l: Lookup, q: set Req] {
  h.hlook' = l and no h.hreq'
  h.hrow' = h.hrow and h.hatt' = h.hatt and h.hmark' = h.hmark
  (h in HValid' iff h in HValid) and (h in HAged' iff h in HAged)
  (h in HSettled' iff h in HSettled) and (h in HClient' iff h in HClient)
  coverage[none] and frame[none, h, q, none, none]
}

-- A PaymentIntent or refund (first-hand or replayed: its state as the create answered it), or Stripe's 400:
-- the key's final answer (settle → finish).
pred ReceiveAnswer[h: Holder] {
  some h.hreq.reply and h.hreq.reply in Obj + Rej400
  let q = h.hreq, x = q.reply {
    consumed[q]
    x in Obj implies finishOrFenced[h, h.hrow, answerFor[x.born], x, x.born, q]
    else finishOrFenced[h, h.hrow, Failed, none, none, q]
  }
}

-- A first-hand 5xx from Stripe's API (Unknown, serverError): released with the mark, for the next driver.
pred Receive500[h: Holder] {
  some h.hreq and h.hreq.reply = Err500 and h.hreq not in Replayed
  consumed[h.hreq] and releaseOrFenced[h, h.hrow, ServerError, h.hreq]
}

-- Stripe replayed a stored 5xx (KeyFinishedWithError): the key's one execution is over. The row's own
-- 5xx (it received one first-hand): list the key's window (lookUpThenMoveOn); else the key's history is one
-- the row cannot place (a row the database lost): search the identity (searchUnknownHistory).
pred ReceiveReplayed500[h: Holder] {
  some h.hreq and h.hreq.reply = Err500 and h.hreq in Replayed
  consumed[h.hreq]
  some OldAbsenceRule implies releaseOrFenced[h, h.hrow, ServerError, h.hreq]
  else lookNext[h, (h.hmark = ServerError => InWindow else InHistory), h.hreq]
}

-- idempotency_error (KeyConflict): a request with this key and other parameters exists at Stripe: park.
pred ReceiveKeyConflict[h: Holder] {
  some h.hreq and h.hreq.reply = IdemErr
  consumed[h.hreq]
  some OldKeyRule implies releaseOrFenced[h, h.hrow, ServerError, h.hreq]   -- the old reading: a 5xx
  else parkOrFenced[h, h.hrow, h.hreq]
}

-- 409 idempotency_key_in_use (KeyInUseException): retried with the same key, or unknown: released.
pred ReceiveInUse[h: Holder] {
  some h.hreq and h.hreq.reply = InUse409
  consumed[h.hreq]
  resend[h, h.hreq] or releaseOrFenced[h, h.hrow, none, h.hreq]
}

-- A timeout, a dropped connection (its reply, if any, is lost), or a 5xx from Stripe's edge (not a replay:
-- the request may or may not have been passed on): the holder stops waiting; the request may still run at
-- Stripe. Retried with the same key, or unknown: released. (The old rule read an edge 5xx as Stripe's 5xx.)
pred GiveUp[h: Holder] {
  some h.hreq
  resend[h, none] or releaseOrFenced[h, h.hrow, none, none]
}
-- ... an edge 5xx under the old rule: read as Stripe's 5xx, the row marked.
pred GiveUpOnEdge5xx[h: Holder] {
  some OldAbsenceRule and some h.hreq
  releaseOrFenced[h, h.hrow, ServerError, none]
}

---- lookups (OperationDriver.lookUpThenMoveOn, searchUnknownHistory, resolvePastHorizon). Each reads Stripe's
---- list and writes the row in one step; while it pages it renews the lease (RENEW_LEASE, fenced).

-- what the lookup finds: the identity's objects (any attempt), from the window's start (the current key's
-- first send) or, when searching a lost history, over the whole lookback (ASSUMPTION: 48 h reaches back to
-- everything Stripe still remembers of the key)
fun found[h: Holder]: set Obj {
  findable[h.hrow] - (h.hlook = InHistory => none else h.hrow.early)
}
pred lookHolds[h: Holder] { h.hrow.owner = h and h.hrow.status = Processing }
pred horizonLookSettled[h: Holder] { (keeps[SettledBeforeHorizonLook] and h.hlook = PastHorizon) implies h in HSettled }

-- LookupAbandonedException: the lease was lost while it paged: answer what the row holds.
pred LookAbandoned[h: Holder] {
  some h.hlook and not lookHolds[h]
  becomeIdle[h] and answerOfRow[h, h.hrow] and keepStripeKey[h.hrow.key]
  coverage[none] and frame[none, h, none, h.hrow.key, none]
}

-- resolvePastHorizon before the key is settled: wait (release, the worker comes back after the duration).
pred WaitHorizon[h: Holder] {
  h.hlook = PastHorizon and h not in HSettled and lookHolds[h]
  releaseOrFenced[h, h.hrow, none, none]
}

-- The list could not be read to its end (LookupFailedException): released (a lost history stays marked).
pred LookFailed[h: Holder] {
  some h.hlook and lookHolds[h] and (horizonLookSettled[h])
  releaseOrFenced[h, h.hrow, (h.hlook = InHistory => HistoryUnknown else none), none]
}

-- The window holds more than the pages a lookup may read (LookupTooLargeException): parked.
pred LookTooLarge[h: Holder] {
  some h.hlook and lookHolds[h] and (horizonLookSettled[h])
  parkOrFenced[h, h.hrow, none]
}

-- Found: that is the outcome (settle with the object as it is now; a succeeded one first).
pred LookFound[h: Holder] {
  some h.hlook and lookHolds[h] and (horizonLookSettled[h])
  some o: found[h] {
    (some found[h] & ostate.Succ) implies o.ostate = Succ
    finishOrFenced[h, h.hrow, answerFor[o.ostate], o, o.ostate, none]
  }
}

-- Nothing found. Past the horizon: parked (a create is never re-sent). Else the key made nothing and can
-- make nothing any more: NEXT_STRIPE_ATTEMPT and the next key's first try, in the same drive (moveOn).
pred LookNothing[h: Holder] {
  some h.hlook and h.hrow.status = Processing and (keeps[NextAttemptFence] implies h.hrow.owner = h)
  horizonLookSettled[h]
  keeps[AbsenceProof] implies no found[h]
  (h.hlook = PastHorizon and keeps[HorizonParks]) implies parkOrFenced[h, h.hrow, none]
  else moveOn[h, h.hrow]
}
pred moveOn[h: Holder, r: Row] {
  keepStripeKey[r.key]
  nextAttemptMatches[r, h] implies {
    let q = nextReq {
      some q and sqlNextAttempt[r, h]
      h.hrow' = r and h.hatt' = r.attempt' and no h.hmark' and no h.hlook' and h.hreq' = q
      h in HValid' and h not in HAged' and (h in HSettled' iff h in HSettled) and (h in HClient' iff h in HClient)
      newTry[h, r, r.attempt', q] and keepClient[r.key]
      coverage[none] and frame[r, h, q, none, none]
    }
  } else {
    becomeIdle[h] and answerOfRow[h, r] and coverage[none] and frame[none, h, none, r.key, none]
  }
}

---- crashes and time of the holders

-- kill -9, an instance lost, a thread that never comes back: its requests stay where they are.
pred Crash[h: Holder] {
  some h.hrow and becomeIdle[h]
  coverage[none] and frame[none, h, none, none, none]
}

-- The holder's lease runs out by its own clock: it sends no more tries (StripeApi.send: LeaseSpentException).
-- (The holder of the row's current lease loses it when the row is taken over; this is for a holder whose
-- lease an event, an operator or a lost commit ended while it still ran.)
pred HolderLeaseEnds[h: Holder] {
  h in HValid and (h.hrow.owner != h or h.hrow.status != Processing)
  lostLease[h] and coverage[none] and frame[none, h, none, none, none]
}

-- key-horizon (23 h) passes for the row's current key (stripe_key_first_sent).
pred HorizonPasses[r: Row] {
  r in live and r.status = Processing and r not in Aged and r in Aged'
  r.status' = r.status and r.owner' = r.owner and r.attempt' = r.attempt and r.mark' = r.mark
  r.obj' = r.obj and r.state' = r.state and r.reserved' = r.reserved
  r.bound' = r.bound and r.foldedH' = r.foldedH and r.early' = r.early and r.earlyC' = r.earlyC
  (r in Used' iff r in Used) and (r in Parked' iff r in Parked)
  coverage[none] and frame[r, none, none, none, none]
}

---- Stripe

pred stripeStep[Q: set Req, K: set Key, O: set Obj] {
  coverage[none] and frame[none, none, Q, K, O]
}
pred repliedWith[q: Req, x: Reply] {
  q.reply' = x and q.rkey' = q.rkey and q.ratt' = q.ratt and q.rrow' = q.rrow and q.rfrom' = q.rfrom
}

-- A try reaches Stripe's API: other parameters → idempotency_error; the key running → 409; the key done →
-- its stored answer, replayed; a new key → its execution starts.
pred Arrive[q: Req] {
  q in Inflight and q not in Inflight'
  let k = q.rkey, a = q.ratt {
    (some k.kpar[a] and not sameParams[q.rrow, k.kpar[a]]) implies {
      repliedWith[q, IdemErr] and q not in Running' and q not in Replayed' and q not in AnsweredEarly'
      stripeStep[q, none, none]
    } else some (Running & rkey.k & ratt.a) implies {
      repliedWith[q, InUse409] and q not in Running' and q not in Replayed' and q not in AnsweredEarly'
      stripeStep[q, none, none]
    } else some k.kres[a] implies {
      repliedWith[q, k.kres[a]] and q in Replayed' and q not in Running' and q not in AnsweredEarly'
      stripeStep[q, none, none]
    } else {
      -- the key's one execution: it starts (and runs), or it runs and ends at once
      q not in Replayed' and q not in AnsweredEarly' and q.rkey' = q.rkey and q.ratt' = q.ratt
      q.rrow' = q.rrow and q.rfrom' = q.rfrom
      k.kpar' = k.kpar + a -> q.rrow and k.forgotten' = k.forgotten and keepClient[k]
      (q in Running' and no q.reply' and k.kres' = k.kres and stripeStep[q, k, none])
      or (q not in Running' and endsWith[q, k, a])
    }
  }
}

-- The try never reaches Stripe's API (an edge drop, a connection cut before the request was whole).
pred Drop[q: Req] {
  q in Inflight and q not in Inflight'
  no q.reply' and q.rkey' = q.rkey and q.ratt' = q.ratt and q.rrow' = q.rrow and q.rfrom' = q.rfrom
  q not in Running' and (q in Replayed' iff q in Replayed) and (q in AnsweredEarly' iff q in AnsweredEarly)
  stripeStep[q, none, none]
}

-- A 500 from Stripe's API while the execution goes on: stored for the key at once.
pred EarlyFail[q: Req] {
  q in Running and q not in AnsweredEarly and no q.reply
  repliedWith[q, Err500] and q in Running' and q in AnsweredEarly' and q not in Replayed'
  q not in Inflight'
  let k = q.rkey {
    k.kres' = k.kres ++ q.ratt -> Err500 and k.kpar' = k.kpar and k.forgotten' = k.forgotten and keepClient[k]
    stripeStep[q, k, none]
  }
}

-- Stripe makes the key's object (Stripe's own rule for a refund: its PaymentIntent succeeded, and its
-- refunds that count stay within the amount).
pred makes[q: Req, o: Obj] {
  o not in Made and o in Made'
  o.okey = q.rkey and o.oatt = q.ratt and o.orow = q.rrow
  no p: objs/prevs[o] - Made | p.okey = o.okey and p.oatt = o.oatt and p.orow = o.orow and p.born = o.born
  o.ostate' = o.born and o.pend' = o.born and o not in Indexed'
  o.okey in RefundKey implies {
    o.ofPI = chargeRowOf[q.rrow].obj and o.ofPI.ostate = Succ
    plus[(sum p: (Made & ofPI.(o.ofPI)) - ostate.(Fail + Canc) | p.okey.amount), o.okey.amount] <= chargeAmount
  }
}

-- How an execution ends: the object it made (its answer, stored), or a refusal (400, stored), or a 500
-- (stored) after it made its object, or not.
pred endsWith[q: Req, k: Key, a: Attempt] {
  (some o: Obj | makes[q, o] and repliedWith[q, o] and k.kres' = k.kres ++ a -> o and stripeStep[q, k, o])
  or (repliedWith[q, Rej400] and k.kres' = k.kres ++ a -> Rej400 and stripeStep[q, k, none])
  or (repliedWith[q, Err500] and k.kres' = k.kres ++ a -> Err500
      and ((some o: Obj | makes[q, o] and stripeStep[q, k, o]) or stripeStep[q, k, none]))
}

-- A running execution ends. After an early 500 it may still make its object (no reply: it had its answer).
pred End[q: Req] {
  q in Running and q not in Running'
  q not in Inflight' and (q in Replayed' iff q in Replayed) and (q in AnsweredEarly' iff q in AnsweredEarly)
  let k = q.rkey, a = q.ratt {
    k.kpar' = k.kpar and k.forgotten' = k.forgotten and keepClient[k]
    q in AnsweredEarly implies {
      k.kres' = k.kres and q.reply' = q.reply and q.rkey' = q.rkey and q.ratt' = q.ratt and q.rrow' = q.rrow
      q.rfrom' = q.rfrom
      (some o: Obj | makes[q, o] and stripeStep[q, k, o]) or stripeStep[q, k, none]
    } else endsWith[q, k, a]
  }
}

-- An object's state moves at Stripe (the customer completes 3-D Secure, a bank debit settles, a refund
-- succeeds or fails later); its webhook event is sent.
pred Advance[o: Obj, s: PState] {
  o in Made
  o.okey in ChargeKey implies ((o.ostate = Pend and s in Succ + Fail + Canc) or (o.ostate = Fail and s in Succ + Canc))
  else ((o.ostate = Pend and s in Succ + Fail + Canc) or (o.ostate = Succ and s = Fail))
  o.ostate' = s and o.pend' = o.pend + s and (o in Made' iff o in Made) and (o in Indexed' iff o in Indexed)
  stripeStep[none, none, o]
}

-- Stripe's search index catches up with an object.
pred IndexObj[o: Obj] {
  o in Made and o not in Indexed and o in Indexed'
  o.ostate' = o.ostate and o.pend' = o.pend and o in Made'
  stripeStep[none, none, o]
}

-- Stripe forgets a key (24 h after it was first used).
-- ASSUMPTION: key-horizon + lease + request-max-duration < 24 h (GuaranteeChecks refuses to start
-- otherwise): by the time Stripe forgets a key, no request with it runs, every holder that could send it
-- saw it as beyond the horizon, and no row that still uses it is younger than the horizon.
pred Forget[k: Key, a: Attempt] {
  (some k.kres[a] or some k.kpar[a]) and a not in k.forgotten
  no busy & rkey.k & ratt.a
  all r: live & key.k | (r.status = Processing and r.attempt = a) implies r in Aged
  no h: HValid - HAged | h.hrow.key = k and h.hatt = a
  k.kres' = (Attempt - a) <: k.kres and k.kpar' = (Attempt - a) <: k.kpar and k.forgotten' = k.forgotten + a
  keepClient[k]
  stripeStep[none, k, none]
}

---- webhooks (WebhookResource → StripeEventInbox → Settlement.applyEvent) and the sync worker

-- LOCK_FOR_OBJECT: the row of an object: by its id, else by its identity (a row that names no object yet;
-- objects made under the old rule carried no identity)
fun owner[o: Obj]: lone Row {
  some (live & obj.o) => live & obj.o
  else (some OldKeyRule => none
        else (live & key.(o.okey)) - (keeps[ObjectOwnerByIdentity] => obj.Obj else none))
}

-- An event, delivered late, out of order, or again (the inbox makes a redelivery change nothing, and so does
-- the rank); one never delivered simply stays pending. A processing row: FINISH_FROM_STRIPE with the
-- driver's answer; an answered one: ADVANCE_STATE (forward only).
pred Deliver[o: Obj, s: PState] {
  s in o.pend and (o.pend' = o.pend - s or o.pend' = o.pend)
  o.ostate' = o.ostate and (o in Made' iff o in Made) and (o in Indexed' iff o in Indexed)
  coverage[none]
  let r = owner[o] {
    no r implies frame[none, none, none, none, o]
    else fromStripeMatches[r] implies {
      sqlFinishFromStripe[r, answerFor[s], o, s] and moneyBack[r] and frame[r + chargeRowOf[r], none, none, none, o]
    } else advanceMatches[r, s] implies {
      sqlAdvanceState[r, o, s] and moneyBack[r] and frame[r + chargeRowOf[r], none, none, none, o]
    } else frame[none, none, none, none, o]
  }
}

-- PaymentSyncWorker: TAKE_DUE_ACCEPTED takes an accepted row whose object is not settled, retrieves the
-- object by id and applies it as an event would (SCHEDULE_RECHECK sets its next look: time is not modelled).
pred SyncLook[r: Row] {
  r in live and r.status = Accepted and some r.obj and r.state not in settledStates[r.key]
  let o = r.obj {
    o.pend' = o.pend + o.ostate and o.ostate' = o.ostate and (o in Made' iff o in Made) and (o in Indexed' iff o in Indexed)
    coverage[none] and frame[none, none, none, none, o]
  }
}
-- ... and cancels at Stripe a 3-D Secure the customer did not complete (requires-action-expiry).
pred SyncCancel[r: Row] {
  r in live and r.status = Accepted and r.key in ChargeKey and some r.obj and r.obj.ostate = Pend
  let o = r.obj {
    o.ostate' = Canc and o.pend' = o.pend + Canc and (o in Made' iff o in Made) and (o in Indexed' iff o in Indexed)
    coverage[none] and frame[none, none, none, none, o]
  }
}

---- operators (OperatorActions: each reads the row, asks Stripe and writes, fenced by the generation it saw)

-- attach: a Stripe object that carries the row's identity, as its driver would have stored it.
pred OpAttach[r: Row, o: Obj] {
  operatorMatches[r] and o in Made and (keeps[OperatorAttachesItsOwn] implies o.okey = r.key)
  sqlFinishByOperator[r, answerFor[o.ostate], o, o.ostate] and moneyBack[r]
  coverage[none] and frame[r + chargeRowOf[r], none, none, none, none]
}

-- mark failed: only when the key is settled (keySettled, by stripe_key_last_sent) and a list from the
-- claim until now finds nothing of the key.
pred OpMarkFailed[r: Row] {
  operatorMatches[r]
  -- IdempotencyStore.ABANDON_BY_OPERATOR: now >= greatest(stripe_key_last_sent, stripe_sending_until)
  -- + request-max-duration, and now >= created_at + lease + request-max-duration. The first bounds every try of
  -- this row's holders, the current one's own in-flight tries included (it sends only before its send bound);
  -- the second the tries of a row of the same key the database lost (its holders claimed before this row was
  -- created and send only within their leases). ASSUMPTION (as settledNow): a try runs at most
  -- request-max-duration after it was sent. So: no try with the key is on its way or running, and no holder of
  -- the key may still send.
  keeps[OperatorKeySettled] implies (no busy & rkey.(r.key) and no HValid & hrow.(key.(r.key)))
  -- OperatorActions.markFailed: the list from lost-history-lookback before created_at to now (not from created_at).
  keeps[OperatorListedNothing] implies no findable[r]
  sqlFinishByOperator[r, Failed, none, none] and moneyBack[r]
  coverage[none] and frame[r + chargeRowOf[r], none, none, none, none]
}

-- re-queue: back to the drivers (the next retry or the recovery worker takes it over).
pred OpRequeue[r: Row] {
  r in live and sqlRequeue[r]
  coverage[none] and frame[r, none, none, none, none]
}

----------------------------------------------------------------------------------------------------------------
-- 4 (continued). THE DATABASE LOSES ITS LAST COMMITS
--
-- A failover to an asynchronous standby (or a point-in-time restore) loses the commits after the standby's
-- position. The model loses them row by row: a row's whole history since its claim is gone (a refund's
-- reservation with it; a charge only together with its refunds). Holders, clients and Stripe keep what they
-- had, and the next retry claims the key again. (A row that comes back in an older version of itself is not
-- modelled; see spec/README.md.)
pred LoseRow[r: Row] {
  r in live and no live & key.(charge.r)
  -- ASSUMPTION: the commits lost are recent: Stripe still has the keys they sent
  no r.status' and no r.owner' and no r.attempt' and no r.mark' and no r.obj' and no r.state'
  no r.reserved' and no r.bound' and no r.foldedH' and no r.early' and no r.earlyC'
  r not in Parked' and r not in Aged' and r in Used'
  r.key in RefundKey implies {
    let c = chargeRowOf[r] {
      (r in released) implies c.reserved' = c.reserved else c.reserved' = minus[c.reserved, r.key.amount]
      keepRowButMoney[c]
    }
  }
  coverage[none] and frame[r + chargeRowOf[r], none, none, none, none]
}

-- RetentionJob: DELETE_FINISHED past chargeonce.idempotency.retention (7 d).
-- ASSUMPTION: a client retries a key for less than the retention (start-up refuses less than 24 h + lease).
pred Retention[r: Row] {
  r in live and sqlDeleteFinished[r]
  r.key in Retired' and r.key.told201' = r.key.told201 and (r.key in ToldNothing' iff r.key in ToldNothing)
  keepStripeKey[r.key]
  coverage[none] and frame[r, none, none, r.key, none]
}

-- Deleting a refund row gives nothing back: the charge's amount_reserved still holds a refund that refunded
-- (only a refund that ends without refunding gives its amount back, in the statement that ends it). The model
-- remembers which deleted rows still hold their amount, so the reservation can be checked after retention too.
fact deletedRefundsStayReserved {
  no HeldByDeleted
  always all r: Row | r in HeldByDeleted' iff
    (r in HeldByDeleted or (Retention[r] and r.key in RefundKey and r not in released))
}

pred Stutter {
  coverage[none] and frame[none, none, none, none, none]
}

----------------------------------------------------------------------------------------------------------------
-- 7. TRACES

fact statics {
  all o: Obj | o.orow.key = o.okey
  all o: Obj | o.okey in RefundKey implies (some o.ofPI and o.ofPI.okey in ChargeKey) else no o.ofPI
  all o: Obj | o.born in Succ + Fail + Pend
  all f: RefundKey | f.charge.key in ChargeKey and f.amount in 1 + 2
}

-- The database may start with charges paid before the trace (so that refunds have something to refund).
pred paidBefore[r: Row] {
  r.key in ChargeKey and r.status = Completed and no r.owner and r.attempt = attempts/first
  no r.mark and r.state = Succ and r.reserved = 0 and no r.bound and no r.foldedH and no r.early and no r.earlyC
  one r.obj and r.obj in Made and r.obj.okey = r.key and r.obj.oatt = attempts/first and r.obj.orow = r
  r.obj.born = Succ and r.obj.ostate = Succ and no r.obj.pend
}

pred init {
  all r: Used | paidBefore[r]
  all r: Row - Used {
    no r.attempt and no r.mark and no r.obj and no r.state and no r.reserved and no r.owner
    no r.bound and no r.foldedH and no r.early and no r.earlyC
  }
  live = Used and no Row.status & Processing
  no Parked and no Aged
  Made = Used.obj and Indexed = Made and no (Obj - Made).ostate and no (Obj - Made).pend
  all k: Key | k.kres = (some rowOf[k] => attempts/first -> rowOf[k].obj else none -> none)
  all k: Key | k.kpar = (some rowOf[k] => attempts/first -> rowOf[k] else none -> none)
  no forgotten and no told201 and no ToldNothing and no Retired
  no Inflight and no Running and no Replayed and no AnsweredEarly
  no rkey and no ratt and no rrow and no rfrom and no reply
  no Covered and no Under
  no hrow and no hatt and no hmark and no hreq and no hlook
  no HValid and no HAged and no HSettled and no HClient
}

pred step {
  (some k: ChargeKey, b: Body | ClaimCharge[k, b])
  or (some f: RefundKey, b: Body | ClaimRefund[f, b])
  or (some r: Row | Recover[r])
  or (some h: Holder | ReceiveAnswer[h] or Receive500[h] or ReceiveReplayed500[h] or ReceiveKeyConflict[h]
                       or ReceiveInUse[h])
  or (some h: Holder | GiveUp[h] or GiveUpOnEdge5xx[h])
  or (some h: Holder | LookFound[h] or LookNothing[h] or LookFailed[h] or LookTooLarge[h] or LookAbandoned[h]
                       or WaitHorizon[h])
  or (some h: Holder | Crash[h] or HolderLeaseEnds[h])
  or (some r: Row | HorizonPasses[r] or Retention[r] or SyncLook[r] or SyncCancel[r]
                    or OpMarkFailed[r] or OpRequeue[r])
  or (some r: Row, o: Obj | OpAttach[r, o])
  or (some q: Req | Arrive[q] or Drop[q] or EarlyFail[q] or End[q])
  or (some o: Obj, s: PState | Advance[o, s] or Deliver[o, s])
  or (some o: Obj | IndexObj[o])
  or (some k: Key, a: Attempt | Forget[k, a])
  or (some r: Row | LoseRow[r])
  or Stutter
}

fact traces { init and always step }

----------------------------------------------------------------------------------------------------------------
-- 8. PROPERTIES

-- Never two succeeded PaymentIntents for one (client, key).
pred noDoubleCharge { all k: ChargeKey | lone Made & okey.k & ostate.Succ }

-- Every completed charge row names the PaymentIntent Stripe has for its key (and Stripe has no other).
pred completedNamesStripes {
  all r: live & key.ChargeKey | r.status = Completed implies
    (r.obj in Made and r.obj.okey = r.key and Made & okey.(r.key) & ostate.Succ in r.obj)
}

-- A client is never told 201 for a payment (or refund) Stripe does not have, of its own key.
pred no201WithoutStripe { all k: Key | k.told201 in Made & okey.k }

-- A row never says "nothing was made" (failed without an object: Stripe refused, or an operator closed it)
-- while Stripe charged its key; nor is a client told so.
pred nothingMadeIsTrue {
  all r: live & key.ChargeKey | (r.status = Failed and no r.obj) implies no Made & okey.(r.key) & ostate.Succ
  all k: ToldNothing & ChargeKey | no Made & okey.k & ostate.Succ
}

-- Refunds never exceed the charge: at Stripe (by Stripe's own rule), and in the service's reservation,
-- which always equals its pending and succeeded refunds (those retention deleted included) and never exceeds
-- the charge.
fun released: set Row { status.Failed + state.(Fail + Canc) }
pred refundsWithinCharge {
  all p: Made & okey.ChargeKey |
    (sum f: (Made & ofPI.p) - ostate.(Fail + Canc) | f.okey.amount) <= chargeAmount
  all c: live & key.ChargeKey | {
    c.reserved = (sum d: ((live & key.(charge.c)) - released) + (HeldByDeleted & key.(charge.c)) | d.key.amount)
    c.reserved <= chargeAmount
  }
}

-- The unique index: one row per key.
pred oneRowPerKey { all k: Key | lone rowOf[k] }

pred chargesSafe {
  noDoubleCharge and completedNamesStripes and no201WithoutStripe and nothingMadeIsTrue and oneRowPerKey
}
pred refundsSafe { refundsWithinCharge and no201WithoutStripe and oneRowPerKey }

-- A state never moves backwards: an answered row keeps its status and its object, and its object's state
-- only moves up; no action but a lost suffix of commits (LoseRow) or retention changes that.
pred neverBackwards {
  all r: live | (r.status != Processing and not LoseRow[r] and not Retention[r]) implies
    (r.status' = r.status and (some r.obj implies r.obj' = r.obj) and (r.state' = r.state or rises[r.key, r.state, r.state']))
}


-- Liveness needs fairness: without it a trace may simply stop, or a request may hang at Stripe forever.
-- A fault is whatever a healthy system stops doing at some point: a crash, a lease that runs out under a live
-- holder (a pause longer than the lease), a timeout while Stripe still works on the request or after its
-- answer came, an edge 5xx, a try lost on the way, an early 5xx, a lookup that fails or is too large, a lost
-- suffix of commits, Stripe forgetting a key, an operator handing a row back, and a holder whose clock does not
-- yet show what it could (keySettled).
pred fault {
  (some h: Holder | Crash[h] or HolderLeaseEnds[h] or GiveUpOnEdge5xx[h] or LookFailed[h] or LookTooLarge[h]
                    or (GiveUp[h] and (h.hreq in busy or some h.hreq.reply)))
  or (some q: Req | Drop[q] or EarlyFail[q])
  or (some r: Row | LoseRow[r] or OpRequeue[r])
  or (some k: Key, a: Attempt | Forget[k, a])
  or (some h: Holder, r: Row | takeOverAndDrive[h, r] and some leaseHolders[r])
  or (some h: Holder | some h.hrow' and h.hrow' != h.hrow and h not in HSettled' and after settledNow[h.hrow'])
}

pred fairButNoRecovery {
  eventually always not fault
  -- Stripe answers every request that reached it (or drops it) at some point
  all q: Req | always (q in busy implies eventually q not in busy)
  -- every drive ends (an answer, a release, a park, a lost lease), and a driver reads the reply it got
  all h: Holder | always (some h.hrow implies eventually no h.hrow)
}
pred recoveryRuns {
  -- the recovery worker runs: a processing row that nobody drives is taken over at some point
  all r: Row | always ((r in live and r.status = Processing and r not in Parked and no hrow.r)
                       implies eventually (some hrow.r or r not in live or r.status != Processing or r in Parked))
}
pred fair { fairButNoRecovery and recoveryRuns }

-- Every row ends: a final answer (completed, failed, accepted), or parked for an operator.
pred everyRowEnds {
  all r: Row | always ((r in live and r.status = Processing and r not in Parked)
                       implies eventually (r not in live or r.status != Processing or r in Parked))
}

-- A mutant: the design with one guard dropped.
pred dropsOnly[g: Guard] { oldRulesOff and Dropped = g }

pred oldKeyRuleOnly { some OldKeyRule and no OldAbsenceRule and no SearchInsteadOfList and no Dropped }
pred oldAbsenceRuleOnly { no OldKeyRule and some OldAbsenceRule and no SearchInsteadOfList and no Dropped }
pred searchOnly { no OldKeyRule and no OldAbsenceRule and some SearchInsteadOfList and no Dropped }

----------------------------------------------------------------------------------------------------------------
-- 9. CHECKS. ProtocolModelTest runs them all (`java -jar alloy.jar exec spec/chargeonce.als`) and asserts that every
--    `expect 0` finds no counterexample and every `expect 1` finds one; spec/README.md states the bounds and the
--    times measured.
--
-- Charges: one client key, two rows (a row lost and the key claimed again; or a charge paid before the trace and
-- lost), two holders (request drivers, retrying clients and recovery workers on any instance share them: a holder
-- is a thread, its role is what it does), two tries in flight, two Stripe objects, two Stripe attempts, one body (a
-- retry with another body is refused before anything changes: claimExisting). "6..6 steps": traces of exactly 6
-- states, which also covers every shorter trace (any trace can stutter, and a lasso can be unrolled).
-- Refunds: a charge paid before the trace and two refund keys on it (1 or 2 units each, of 2).

check NoDoubleCharge { currentDesign implies always noDoubleCharge }
  for 2 but 1 ChargeKey, 0 RefundKey, 2 Row, 2 Holder, 2 Req, 2 Obj, 2 Attempt, 1 Body, 6..6 steps expect 0

check ChargeAnswersTrue { currentDesign implies always (completedNamesStripes and no201WithoutStripe and oneRowPerKey) }
  for 2 but 1 ChargeKey, 0 RefundKey, 2 Row, 2 Holder, 2 Req, 2 Obj, 2 Attempt, 1 Body, 6..6 steps expect 0

check NothingMadeIsTrue { currentDesign implies always nothingMadeIsTrue }
  for 2 but 1 ChargeKey, 0 RefundKey, 2 Row, 2 Holder, 2 Req, 2 Obj, 2 Attempt, 1 Body, 6..6 steps expect 0

check RefundsWithinCharge { currentDesign implies always (refundsSafe and neverBackwards) }
  for 3 but 1 ChargeKey, 2 RefundKey, 3 Row, 1 Holder, 1 Req, 3 Obj, 1 Attempt, 1 Body, 5..5 steps expect 0

check NeverBackwards { currentDesign implies always neverBackwards }
  for 2 but 1 ChargeKey, 0 RefundKey, 2 Row, 2 Holder, 2 Req, 2 Obj, 2 Attempt, 1 Body, 6..6 steps expect 0

-- Depth. The known double charges need up to 8 states, and the charge checks above (two rows and two holders
-- at once) stop at 6. So every charge property is also checked at 8 states, in the two scopes the known bugs
-- live in: one row with two holders (a request, a retry, a recovery worker racing on one row: the one-key charge
-- mutants the table calls load-bearing, and OldAbsenceRule, SearchInsteadOfList), and two rows with one holder (a row
-- lost, and the key claimed again: OldKeyRule, found there at 8 states).
check ChargesAtDepthOneRow { currentDesign implies always (chargesSafe and neverBackwards) }
  for 2 but 1 ChargeKey, 0 RefundKey, 1 Row, 2 Holder, 2 Req, 2 Obj, 2 Attempt, 1 Body, 8..8 steps expect 0

check ChargesAtDepthOneHolder { currentDesign implies always (chargesSafe and neverBackwards) }
  for 2 but 1 ChargeKey, 0 RefundKey, 2 Row, 1 Holder, 2 Req, 2 Obj, 2 Attempt, 1 Body, 8..8 steps expect 0

-- Two client keys: an object made for one key never answers the other's row. What a second key adds is where an
-- object could be taken for another key's: an operator attaching what a list found, an event found by identity.
-- Each is one step once the object exists, so 4 states hold them (the attach's counterexample needs 3); two keys
-- double the state, and 6 states took minutes.
check ChargesTwoKeys { currentDesign implies always (chargesSafe and neverBackwards) }
  for 2 but 2 ChargeKey, 0 RefundKey, 2 Row, 1 Holder, 1 Req, 2 Obj, 1 Attempt, 1 Body, 4..4 steps expect 0

check EveryRowEnds { (currentDesign and fair) implies everyRowEnds }
  for 2 but 1 ChargeKey, 0 RefundKey, 1 Row, 2 Holder, 2 Req, 2 Obj, 2 Attempt, 1 Body, 6..6 steps expect 0

-- Fairness is not contradictory: there are fair traces in which a row is processing (without this, EveryRowEnds
-- could hold because no fair trace exists at all).
check FairTracesExist { not (currentDesign and fair and eventually some status.Processing) }
  for 2 but 1 ChargeKey, 0 RefundKey, 1 Row, 2 Holder, 2 Req, 2 Obj, 2 Attempt, 1 Body, 6..6 steps expect 1

-- Liveness can fail: without the recovery worker, a row whose driver crashed (and whose client gave up) stays
-- processing for ever.
check EveryRowEndsNeedsRecovery { (currentDesign and fairButNoRecovery) implies everyRowEnds }
  for 2 but 1 ChargeKey, 0 RefundKey, 1 Row, 2 Holder, 2 Req, 2 Obj, 2 Attempt, 1 Body, 6..6 steps expect 1

-- The old rules put back: each must find its double charge (two succeeded PaymentIntents for one key).
-- A row lost after the charge (OldKeyRule): the retry's new row has another id, so Stripe answers its key with
-- idempotency_error, read as a 5xx; the lookup by the new row's id finds nothing; the next attempt charges again.
check OldKeyRuleDoubleCharges { oldKeyRuleOnly implies always noDoubleCharge }
  for 2 but 1 ChargeKey, 0 RefundKey, 2 Row, 1 Holder, 2 Req, 2 Obj, 2 Attempt, 1 Body, 8 steps expect 1

-- A new attempt while the previous request still ran at Stripe (OldAbsenceRule): an edge 5xx marked the row, the
-- next driver listed at once, found nothing yet, and sent the next key; both requests charged.
check OldAbsenceRuleDoubleCharges { oldAbsenceRuleOnly implies always noDoubleCharge }
  for 2 but 1 ChargeKey, 0 RefundKey, 1 Row, 2 Holder, 2 Req, 2 Obj, 2 Attempt, 1 Body, 7 steps expect 1

-- A lookup by Stripe's search (eventually consistent) instead of a list: the payment is made but not found yet.
check SearchInsteadOfListDoubleCharges { searchOnly implies always noDoubleCharge }
  for 2 but 1 ChargeKey, 0 RefundKey, 1 Row, 2 Holder, 2 Req, 2 Obj, 2 Attempt, 1 Body, 8 steps expect 1
