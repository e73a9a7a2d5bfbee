package dev.chargeonce.tenant;

import dev.chargeonce.stripe.StripeGateway;
import dev.chargeonce.web.ApiException;
import jakarta.enterprise.context.ApplicationScoped;
import java.time.Duration;
import java.util.Optional;

/**
 * A charge names only a customer of its own client. A Stripe Customer id is no secret (it shows in dashboards,
 * receipts, logs): without this, one client could charge another client's customer, saved card included, by
 * knowing the id. The owner is the client named in the Customer's metadata at Stripe ({@code chargeonce_client_id},
 * set by whoever creates customers for that client), proven once and then remembered in the database. Anything else
 * (another client's customer, a customer that names no client, one Stripe does not have) is refused before the key is
 * claimed, with the same answer Stripe gives for an unknown customer, so that a foreign id is indistinguishable from
 * one that does not exist. (A PaymentMethod saved on a customer can only be charged with that customer: Stripe
 * refuses it otherwise, so the customer's check covers saved cards.)
 */
@ApplicationScoped
public class CustomerOwnership {

    /** The metadata key that names a Customer's client. */
    public static final String CLIENT_METADATA = "chargeonce_client_id";

    private final CustomerOwners owners;
    private final StripeGateway stripe;

    CustomerOwnership(CustomerOwners owners, StripeGateway stripe) {
        this.owners = owners;
        this.stripe = stripe;
    }

    /** Refuses a customer {@code clientId} may not charge; returns normally when it may. */
    public void check(String clientId, String customerId) {
        Optional<String> known = owners.ownerOf(customerId);
        if (known.isPresent()) {
            if (!known.get().equals(clientId)) {
                throw noSuchCustomer(customerId);
            }
            return;
        }
        Optional<String> named;
        try {
            named = stripe.customerClient(customerId);
        } catch (StripeGateway.LookupFailedException e) {
            throw ApiException.unavailable("stripe_unavailable",
                    "Stripe could not confirm the customer right now and nothing was charged. Retry with the same Idempotency-Key.",
                    Duration.ofSeconds(2));
        }
        if (named.isEmpty() || !named.get().equals(clientId)) {
            throw noSuchCustomer(customerId);
        }
        owners.remember(customerId, clientId);
    }

    static ApiException noSuchCustomer(String customerId) {
        return ApiException.invalidRequest("resource_missing", "No such customer: '" + customerId + "'", "customer");
    }
}
