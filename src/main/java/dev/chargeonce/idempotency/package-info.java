/**
 * The core: a key's claim, its lease, the fenced finish and the replay, over an {@link dev.chargeonce.idempotency.Operation}
 * (a charge on {@code stripe_intents}, a refund on {@code stripe_refunds}). Every statement on those two tables lives in
 * this package, split by what it does; the packages above hold none.
 *
 * <h2>Who does what</h2>
 * <ul>
 *   <li>{@link dev.chargeonce.idempotency.StatementCatalog}: the statements charges and refunds share, written once as
 *       templates over the operation's table and columns and rendered per operation, held by name (the tests that
 *       check them, and bench/'s pgbench reference, read them from here).</li>
 *   <li>{@link dev.chargeonce.idempotency.Claims}: the claim, the takeover of an expired lease, and a holder's writes
 *       short of its answer (release, renewal, next Stripe attempt, parking for an operator); a waiter's mark.</li>
 *   <li>{@link dev.chargeonce.idempotency.RefundReservations}: a new refund key's claim, with its amount reserved on
 *       its charge.</li>
 *   <li>{@link dev.chargeonce.idempotency.Finishes}: the holder's fenced finish, what a holder that lost its lease
 *       finds, and what Stripe says after the answer (events, the sync worker), in the caller's transaction.</li>
 *   <li>{@link dev.chargeonce.idempotency.Reads}: the read endpoints' charges and refunds, and a key's status.</li>
 *   <li>{@link dev.chargeonce.idempotency.CommandResults}: the rows a Kafka command waits on.</li>
 *   <li>{@link dev.chargeonce.idempotency.OperatorRows}: reconciliation's reads and the operators' fenced actions.</li>
 *   <li>{@link dev.chargeonce.idempotency.Upkeep}: retention, the gauges' counts, the key-hash versions in use.</li>
 *   <li>{@code Row} and {@code Jdbc}, package-private: the row as a claim hands it over, and how a statement runs.</li>
 * </ul>
 * The protocol after the claim (one Stripe call or a lookup, then one fenced finish) is driven by
 * {@code dev.chargeonce.operation.OperationDriver}, the same for every operation; only what is sent to Stripe and
 * how its answer reads differ ({@code StripeSide}).
 *
 * <h2>The row's life</h2>
 * A claim inserts the row {@code processing} with lease generation 1 and Stripe attempt 1; its holder calls Stripe and
 * finishes the row {@code completed}, {@code accepted} (Stripe's outcome still to come) or {@code failed}, with the
 * answer the client gets. A holder that cannot tell what Stripe did releases its lease, and the next retry or the
 * recovery worker takes the row over once the lease has expired. A row whose outcome the service cannot prove is parked
 * ({@code needs_reconciliation}) for an operator. A new key costs the claim's read and its insert, one Stripe call and
 * one finish; a retry of a finished key costs one indexed read.
 *
 * <h2>The invariants, and which class keeps each</h2>
 * <ol>
 *   <li><b>The claim commits before Stripe is called.</b> Every statement is its own committed transaction, or the
 *       caller's transaction, never one that spans a Stripe call: no connection is held while Stripe works. A claim
 *       that cannot commit throws {@link dev.chargeonce.idempotency.DatabaseUnavailableException}, before anything is
 *       sent. ({@code Claims}, {@code RefundReservations}.)</li>
 *   <li><b>One row per (client, key), and the insert decides.</b> The claim reads the key's row first (a retry is that
 *       read alone), and only when there is none inserts {@code ON CONFLICT DO NOTHING} on the unique (client,
 *       identity); a concurrent claim that lost the insert reads the winner's row. While instances write different
 *       key-hash versions, both statements run under the key's advisory lock, the same name under every version.
 *       Rows are found by the key's identity (a keyed hash of client and key), never by the raw key.
 *       ({@code Claims}, {@code RefundReservations}, {@code Row#ofKey}.)</li>
 *   <li><b>The lease generation fences writers.</b> Every takeover increments it (a retry's, the recovery worker's,
 *       an event's or the sync worker's finish of a processing row, an operator's action); every write a holder makes
 *       carries the generation it was given, so a finish, release, renewal, next attempt or park with an old generation
 *       changes nothing, and the holder then answers what the row holds ({@code Finishes#stateOf}).
 *       ({@code Claims}, {@code Finishes}, {@code OperatorRows}; the statements in {@code StatementCatalog}.)</li>
 *   <li><b>The Stripe attempt picks the Stripe idempotency key, and grows only on proof.</b> A takeover never changes
 *       it; {@code Claims#nextStripeAttempt} moves it on, fenced by the lease generation and the attempt the holder
 *       read, only when the driver has proven that the current key created no object at Stripe and that no request with
 *       it can still run there. Deriving the key from the lease generation would turn every takeover into a second
 *       charge. ({@code Claims}; the proof is {@code OperationDriver}'s.)</li>
 *   <li><b>A holder sends only inside its lease, and the next holder knows how late the last one may have sent.</b> A
 *       lease records its send bound ({@code stripe_sending_until}); a takeover joins it to the key's last send, and a
 *       release reports the holder's own sends. ({@code Claims}.)</li>
 *   <li><b>One clock.</b> Every time a statement reads or writes is the database's {@code statement_timestamp()}; a
 *       statement that grants a lease returns no clock ({@code Row#held} derives it from the lease it bound), and a
 *       holder's own deadline is its {@code System.nanoTime()} from before the statement. ({@code StatementCatalog},
 *       {@code Row}.)</li>
 *   <li><b>A finished answer is replayed byte for byte.</b> Only a statement that matches {@code status = 'processing'}
 *       writes the answer; nothing writes it again. A retry with the same fingerprint gets the stored status and body;
 *       another body under the key gets a mismatch, never a new charge. ({@code Finishes} writes it once,
 *       {@code Claims} replays it.)</li>
 *   <li><b>Stripe's later word only moves forward.</b> An answered row's Stripe state moves to a higher rank only,
 *       never out of a final state, and never changes the stored answer; a processing row that Stripe's word finishes
 *       is finished with the answer a driver would have given, fencing out its holder. ({@code Finishes}.)</li>
 *   <li><b>Refunds never promise back more than was paid.</b> A new refund key is claimed in one transaction that locks
 *       its charge, looks again for the key under the lock, checks what is left, inserts and reserves; a refund that
 *       ends without refunding gives its amount back in the statement that ends it. So {@code amount_reserved} is
 *       always the pending and succeeded refunds, and never more than the charge. What is left also leaves out the
 *       pending and succeeded refunds made outside the service (Stripe's Dashboard) that it has heard of, recorded
 *       under the same lock and read after it. ({@code RefundReservations}; the give-back, {@code REFUND_RELEASE}, in
 *       the finishes of {@code Finishes} and {@code OperatorRows}; the outside refunds, {@code OutsideRefundRows}.)</li>
 *   <li><b>Operators' actions are fenced like drivers'.</b> Each carries the lease generation the operator saw and
 *       moves it on; "nothing was made" is written only once no try of the key can still reach Stripe, by the
 *       database's clock. {@code StatementCatalog} refuses to load if a derived operator statement lost its fence or
 *       its wait. ({@code OperatorRows}.)</li>
 *   <li><b>Retention never deletes what still counts.</b> Only finished rows older than the age it is given, never a
 *       processing row, never a row whose Stripe object is still followed, never a charge that still has refunds; each
 *       client's candidates are checked again under their locks. ({@code Upkeep}; the age and its floor, Stripe's key
 *       window plus the lease, are {@code RetentionJob}'s.)</li>
 *   <li><b>A Kafka command's result is queued with the answer.</b> Every statement that finishes a charge queues the
 *       result of a row a command claimed, in the same statement; the plain finish matches only rows without one.
 *       ({@code StatementCatalog} refuses to load otherwise; {@code CommandResults} for a row a command meets
 *       later.)</li>
 *   <li><b>Background scans decide nothing.</b> The recovery worker's, the sync worker's and retention's candidates,
 *       the gauges and reconciliation's reads run without locks over every client; each candidate is then handled by
 *       a fenced statement on one row, so two instances that read the same candidate act on it once. ({@code Jdbc}'s
 *       {@code takeEach}, {@code Claims}, {@code Finishes}, {@code Upkeep}, {@code OperatorRows}.)</li>
 *   <li><b>Only the primary.</b> Every class here is given the default data source alone; only the read endpoints'
 *       reads take the source their caller names, which may be a replica. ({@code WithoutReplicaTest}.)</li>
 *   <li><b>Every statement names its rows' client, and one about a row seeks it by its id.</b> So that Citus routes
 *       it to one shard, and the planner never scans an index of in-flight rows to find it; the only exceptions are
 *       the reads over every client above, which lock and write nothing. ({@code CitusRulesTest},
 *       {@code StatementPlansTest}; the protocol model's table, {@code ProtocolModelTest}, ties the statements by name
 *       to {@code spec/chargeonce.als}.)</li>
 * </ol>
 */
package dev.chargeonce.idempotency;
