// GeneratedClientsIT runs this under node against the packaged service: the TypeScript client generated from
// openapi.yaml (typescript-fetch, openapi-generator's defaults), used the way an application uses it. Every check
// throws on a difference; the process exits 1 with the failure, 0 after the last line.
import {
    ChargesApi, Configuration, RefundsApi, ResponseError, ChargeFromJSON, ChargeToJSON, ErrorResponseFromJSON,
    IdempotencyKeyStatusFromJSON, Charge, IdempotencyKeyStatus, ErrorDetail, RefundCreateRequestReasonEnum,
} from '../../../target/generated-clients/typescript';

declare const process: { env: Record<string, string | undefined>; exit(code: number): never };

const basePath = process.env.CHARGEONCE_URL!;
const config = new Configuration({ basePath, accessToken: process.env.CHARGEONCE_API_KEY });
const charges = new ChargesApi(config);
const refunds = new RefundsApi(config);
const imfFixdate = /^(Mon|Tue|Wed|Thu|Fri|Sat|Sun), \d{2} (Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) \d{4} \d{2}:\d{2}:\d{2} GMT$/;

// The opened enumerations, checked by the compiler: a value the contract does not list is still a value of the type.
const futureStatus: Charge['status'] = 'disputed';
const futureOperation: IdempotencyKeyStatus['operation'] = 'payout';
const futureCode: ErrorDetail['code'] = 'a_code_added_later';

function check(condition: boolean, what: string): void {
    if (!condition) {
        throw new Error('check failed: ' + what);
    }
}

function key(prefix: string): string {
    return `ts-${prefix}-${Date.now()}-${Math.random().toString(36).slice(2)}`;
}

/** A refusal as an application reads it: the status, and the body in the error model. */
async function refusal(call: () => Promise<unknown>): Promise<{ status: number; error: ErrorDetail; retryAfter: string | null }> {
    try {
        await call();
    } catch (e) {
        if (e instanceof ResponseError) {
            const body = ErrorResponseFromJSON(await e.response.json());
            return { status: e.response.status, error: body.error, retryAfter: e.response.headers.get('Retry-After') };
        }
        throw e;
    }
    throw new Error('expected a refusal, got an answer');
}

async function createRequests(sandbox: string): Promise<number> {
    return (await (await fetch(`${sandbox}/_sandbox/stats`)).json()).create_requests;
}

const visa = (amount: number) => ({ amount, currency: 'usd', paymentMethod: 'pm_card_visa', metadata: { order_id: `O-${amount}` } });

async function main(): Promise<void> {
    const chargeKey = key('charge');
    const first = await charges.createChargeRaw({ idempotencyKey: chargeKey, chargeCreateRequest: visa(1000) });
    const charge = await first.value();
    check(first.raw.status === 201 && charge.status === 'succeeded' && charge.object === 'charge', 'a charge is 201 succeeded');
    check(first.raw.headers.get('Idempotent-Replayed') === null, 'a first answer is no replay');
    const replay = await charges.createChargeRaw({ idempotencyKey: chargeKey, chargeCreateRequest: visa(1000) });
    check((await replay.value()).id === charge.id, 'the same key is the same charge');
    check(replay.raw.headers.get('Idempotent-Replayed') === 'true', 'a retry is a replay');
    check(imfFixdate.test(replay.raw.headers.get('Idempotent-Original-Date') ?? ''), 'Idempotent-Original-Date is IMF-fixdate');
    check(imfFixdate.test(replay.raw.headers.get('Idempotency-Key-Expires') ?? ''), 'Idempotency-Key-Expires is IMF-fixdate');
    check((await charges.getCharge({ id: charge.id })).amount === 1000, 'the charge reads back');

    const invalid = await refusal(() => charges.createCharge({ idempotencyKey: key('bad'), chargeCreateRequest: { ...visa(1000), currency: 'USD' } }));
    check(invalid.status === 400 && invalid.error.code === 'parameter_invalid' && invalid.error.param === 'currency', '400 names the field');
    const anonymous = new ChargesApi(new Configuration({ basePath }));
    const unauthorized = await refusal(() => anonymous.getCharge({ id: charge.id }));
    check(unauthorized.status === 401 && unauthorized.error.code === 'invalid_api_key', '401 without an API key');
    const reused = await refusal(() => charges.createCharge({ idempotencyKey: chargeKey, chargeCreateRequest: visa(2000) }));
    check(reused.status === 422 && reused.error.code === 'idempotency_key_reused', '422 for a key reused');

    // 409: the same key while its first request is held at Stripe (the sandbox's latency switch).
    const sandbox = process.env.SANDBOX_URL!;
    await fetch(`${sandbox}/_sandbox/faults?latency_ms=3000`, { method: 'POST' });
    try {
        const slowKey = key('slow');
        const creates = await createRequests(sandbox);
        const slow = charges.createCharge({ idempotencyKey: slowKey, chargeCreateRequest: visa(1500) });
        // The first request is at Stripe (so it holds the key) once the sandbox counts its create.
        for (const deadline = Date.now() + 30_000; await createRequests(sandbox) === creates;) {
            check(Date.now() < deadline, 'Stripe saw the slow charge');
            await new Promise((resolve) => setTimeout(resolve, 20));
        }
        const inFlight = await refusal(() => charges.createCharge({ idempotencyKey: slowKey, chargeCreateRequest: visa(1500) }));
        check(inFlight.status === 409 && inFlight.error.code === 'idempotency_key_in_use', '409 while in flight');
        check(inFlight.retryAfter !== null, '409 says when to come back');
        check((await slow).status === 'succeeded', 'the held charge succeeds');
    } finally {
        await fetch(`${sandbox}/_sandbox/faults?latency_ms=0`, { method: 'POST' });
    }

    const partial = await refunds.createRefund({ id: charge.id, idempotencyKey: key('refund'),
        refundCreateRequest: { amount: 300, reason: RefundCreateRequestReasonEnum.RequestedByCustomer } });
    check(partial.amount === 300 && partial.reason === 'requested_by_customer', 'a partial refund');
    const restKey = key('refund');
    const rest = await refunds.createRefund({ id: charge.id, idempotencyKey: restKey });
    check(rest.amount === 700, 'no body: what is left');
    const restAgain = await refunds.createRefundRaw({ id: charge.id, idempotencyKey: restKey });
    check((await restAgain.value()).id === rest.id && restAgain.raw.headers.get('Idempotent-Replayed') === 'true', 'a refund replays');
    check((await refunds.listRefunds({ id: charge.id })).data.length === 2, 'two refunds listed');

    const spaced = `ts status/${Date.now()} ?&%`;
    const spacedCharge = await charges.createCharge({ idempotencyKey: spaced, chargeCreateRequest: visa(1200) });
    const status = await charges.getIdempotencyKey({ key: spaced });
    check(status.status === 'completed' && status.operation === 'charge' && status.charge === spacedCharge.id, "a key's status");
    const page = await charges.listCharges({ limit: 2 });
    check(page.data.length === 2 && page.hasMore, 'a page of two');

    const future = ChargeFromJSON({ ...ChargeToJSON(charge), status: futureStatus, object: 'charge_v2' });
    check(future.status === 'disputed' && future.object === 'charge_v2' && future.id === charge.id, 'an unknown status is read');
    const futureKey = IdempotencyKeyStatusFromJSON({ object: 'idempotency_key', key: 'k', operation: futureOperation,
        status: 'archived', created: 1, expires: null, lease_expires: null, stripe_attempt: 1 });
    check(futureKey.status === 'archived' && futureKey.operation === 'payout', 'an unknown key status is read');
    check(futureCode.length > 0, 'an unknown error code is a string');
    console.log('typescript client: all checks held');
}

main().catch((e) => {
    console.error(e instanceof Error ? e.stack ?? e.message : e);
    process.exit(1);
});
