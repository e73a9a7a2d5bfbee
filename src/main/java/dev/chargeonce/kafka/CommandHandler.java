package dev.chargeonce.kafka;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.chargeonce.charge.ChargeRequest;
import dev.chargeonce.charge.ChargeRequestParser;
import dev.chargeonce.charge.ChargeService;
import dev.chargeonce.idempotency.Claim;
import dev.chargeonce.idempotency.DatabaseUnavailableException;
import dev.chargeonce.idempotency.IdempotencyKey;
import dev.chargeonce.idempotency.CommandResults;
import dev.chargeonce.idempotency.KeyIdentities;
import dev.chargeonce.idempotency.ResultOutbox;
import dev.chargeonce.web.ApiException;
import dev.chargeonce.web.ErrorBody;
import jakarta.enterprise.context.ApplicationScoped;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Optional;
import org.jboss.logging.Logger;

/**
 * One charge command, whatever transport brought it: its event id is the Idempotency-Key of client
 * {@code chargeonce.kafka.client-id}, its value the body of {@code POST /v1/charges}, and it goes through the very
 * claim, driver, lease, recovery and replay of that endpoint. What it answers is whether the record may be
 * acknowledged (its offset committed):
 * <ul>
 *   <li>{@link Decision.Ack} once the key's row is committed: finished (its finish queued the result in the same
 *       statement), parked for an operator, or still processing, then with a lease that the holder, a retry or the
 *       recovery worker of any instance finishes (and that finish queues the result). A key first used with another
 *       body: its 422 is queued first.</li>
 *   <li>{@link Decision.Retry} when nothing was committed for it (the database is down, the instance is shutting
 *       down, Stripe's circuit is open for a new key): the record is read again, nothing is lost.</li>
 *   <li>{@link Decision.DeadLetter} for a poison record: no valid event id, or a body the endpoint refuses with 400
 *       before any claim. Nothing was stored; the record goes to the dead-letter topic with the reason.</li>
 * </ul>
 */
@ApplicationScoped
public class CommandHandler {

    private static final Logger LOG = Logger.getLogger(CommandHandler.class);

    /** A record as the handler needs it. */
    public record Command(String topic, int partition, long offset, byte[] key, byte[] value) {
        /** The record's place, stored as the origin of the row it claims: how a redelivery is told from a duplicate. */
        public String origin() {
            return "kafka:" + topic + "-" + partition + "@" + offset;
        }
    }

    public sealed interface Decision {
        record Ack(String result) implements Decision {
        }

        record Retry(String reason, Duration after) implements Decision {
        }

        /** @param reason the error a {@code POST /v1/charges} would have answered (its JSON) */
        record DeadLetter(String reason) implements Decision {
        }
    }

    private final ChargeService charges;
    private final CommandResults commandResults;
    private final ResultOutbox outbox;
    private final KafkaConfig config;
    private final KafkaMetrics metrics;
    private final ObjectMapper json;
    private final KeyIdentities identities;

    CommandHandler(ChargeService charges, CommandResults commandResults, ResultOutbox outbox, KafkaConfig config,
                   KafkaMetrics metrics, ObjectMapper json, KeyIdentities identities) {
        this.identities = identities;
        this.charges = charges;
        this.commandResults = commandResults;
        this.outbox = outbox;
        this.config = config;
        this.metrics = metrics;
        this.json = json;
    }

    public Decision handle(Command command) {
        IdempotencyKey key;
        ChargeRequest request;
        try {
            key = IdempotencyKey.parse(eventId(command.key()));
            request = ChargeRequestParser.parse(command.value() == null ? new byte[0] : command.value());
        } catch (ApiException e) {
            // Refused before any claim, as POST /v1/charges refuses it: nothing stored, nothing charged.
            return new Decision.DeadLetter(errorJson(e));
        }
        String origin = command.origin();
        ChargeService.Charged charged;
        try {
            charged = charges.charge(config.clientId(), key, request, origin);
        } catch (ApiException e) {
            if (e.status() == 422) {
                // The event id was first used with another body: answered as HTTP answers it, and not charged.
                outbox.queueRefused(config.clientId(), key.value(), origin, 422, errorJson(e));
                return new Decision.Ack("refused");
            }
            if (e.status() == 400) {
                // Refused before any claim (another client's customer): no retry changes it, as for a bad body.
                return new Decision.DeadLetter(errorJson(e));
            }
            return new Decision.Retry(e.code(), e.retryAfter() != null ? e.retryAfter() : config.retryBackoff());
        } catch (DatabaseUnavailableException e) {
            return new Decision.Retry("database_unavailable", config.retryBackoff());
        }
        if (charged.claim() == null) {
            // Stripe's circuit is open and the key had no row: nothing was claimed.
            return new Decision.Retry("stripe_unavailable", config.retryBackoff());
        }
        boolean unresolved = charged.answer().retryAfter() != null;
        String result;
        if (charged.claim() instanceof Claim.Fresh) {
            result = "charged";
        } else {
            // The key had a row: make sure it publishes its result, and tell a redelivery from a duplicate.
            Optional<CommandResults.KeyOrigin> row = commandResults.adoptForResults(config.clientId(), key, origin,
                    dev.chargeonce.charge.ChargeQueries::viewJson);
            result = row.isPresent() && origin.equals(row.get().origin()) ? "redelivered" : "duplicate";
            unresolved = row.map(CommandResults.KeyOrigin::processing).orElse(unresolved);
        }
        if (unresolved) {
            // Still processing (unknown outcome, in flight elsewhere, pending at Stripe): its lease expires or is
            // released, and the recovery worker (on every instance) finishes it; that finish queues the result.
            metrics.handedToRecovery();
            // The key as the logs show keys (the keyed tag of the HTTP requests' MDC): an unkeyed hash of an event id
            // would confirm a guess of it to whoever reads the logs.
            LOG.infof("command %s (%s): %d, left to the recovery worker", identities.logTag(config.clientId(), key.value()),
                    origin, charged.answer().status());
        }
        return new Decision.Ack(result);
    }

    /** The key of the row an acknowledged command's event id has (under the topic's client). */
    IdempotencyKey rowKey(byte[] eventId) {
        return IdempotencyKey.parse(eventId(eventId));
    }

    /** The record key as text: strict UTF-8 (then {@link IdempotencyKey#parse} requires printable ASCII). */
    private static String eventId(byte[] key) {
        if (key == null) {
            throw ApiException.invalidRequest("idempotency_key_missing", "A charge command's record key is its event id,"
                    + " its Idempotency-Key: a unique value per logical payment, the same on every retry of the producer.",
                    IdempotencyKey.HEADER);
        }
        try {
            return StandardCharsets.UTF_8.newDecoder().onMalformedInput(CodingErrorAction.REPORT)
                    .onUnmappableCharacter(CodingErrorAction.REPORT).decode(ByteBuffer.wrap(key)).toString();
        } catch (CharacterCodingException e) {
            throw ApiException.invalidRequest("idempotency_key_invalid", "Idempotency-Key must be printable ASCII.",
                    IdempotencyKey.HEADER);
        }
    }

    /** The error exactly as the HTTP endpoint renders it. */
    String errorJson(ApiException e) {
        try {
            return json.writeValueAsString(ErrorBody.of(e.type(), e.code(), e.getMessage(), e.param()));
        } catch (JsonProcessingException x) {
            throw new IllegalStateException(x);
        }
    }
}
