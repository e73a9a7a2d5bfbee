package dev.chargeonce.console;

import dev.chargeonce.reconcile.OperatorActions;
import dev.chargeonce.reconcile.OperatorActions.Kind;
import java.util.Arrays;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.function.Function;
import java.util.stream.Collectors;

/**
 * The banner a page shows after an action: fixed words per kind of outcome, chosen here. The redirect after an
 * action names the banner by id ({@code ?message=moved}); a link can carry only an id, and an id this class does
 * not know shows nothing, so no one can put words of their own into the console's mouth. The particulars of an
 * outcome (ids, generations, what Stripe said) are in the operator actions the pages list, from the audit trail.
 */
final class Banners {

    /** A banner: done (green) or refused, and its words. */
    record Banner(boolean done, String text) {
    }

    private static final Map<String, Kind> BY_ID = Arrays.stream(Kind.values())
            .collect(Collectors.toUnmodifiableMap(Banners::id, Function.identity()));

    private Banners() {
    }

    /** The id of an outcome's banner, for the redirect's {@code ?message=}. */
    static String id(OperatorActions.Outcome outcome) {
        return id(outcome.kind());
    }

    static String id(Kind kind) {
        return kind.name().toLowerCase(Locale.ROOT).replace('_', '-');
    }

    /** The banner an id names; none for an id that names none (or no id). */
    static Optional<Banner> byId(String id) {
        return Optional.ofNullable(id == null ? null : BY_ID.get(id)).map(Banners::banner);
    }

    static Banner banner(Kind kind) {
        return switch (kind) {
            case ATTACHED -> new Banner(true, "Attached: the row now holds the answer that Stripe object gives, and the client's retry "
                    + "replays it.");
            case MARKED_FAILED -> new Banner(true, "Marked failed: Stripe has nothing for this key; the client's retry is told to use a "
                    + "new key.");
            case REQUEUED -> new Banner(true, "Re-queued: the row is back with the drivers; the next retry or the recovery worker takes "
                    + "it over.");
            case ACKNOWLEDGED -> new Banner(true, "Finding acknowledged.");
            case REASON_REQUIRED -> refused("say why: every action is recorded with its reason.");
            case REASON_TOO_LONG -> refused("the reason is longer than 1000 characters.");
            case OBJECT_REQUIRED -> refused("name the Stripe object to attach (pi_…, re_…).");
            case NOT_PROCESSING -> refused("the row is not processing: it has its answer already.");
            case MOVED -> refused("the row moved since you looked; look again.");
            case STRIPE_UNREACHABLE -> refused("Stripe could not be asked; try again.");
            case WRONG_IDENTITY -> refused("that Stripe object does not carry this row's key identity.");
            case NOT_FINAL -> refused("that Stripe object is not an answer yet; attach it once it is.");
            case STILL_SETTLING -> refused("a request with this key may still reach Stripe; try again later (when: in the operator "
                    + "actions).");
            case STRIPE_HAS_OBJECT -> refused("Stripe has an object for this key: attach it instead.");
            case NO_FINDING -> refused("no such finding.");
            case ALREADY_RESOLVED -> refused("the finding is resolved already.");
        };
    }

    private static Banner refused(String why) {
        return new Banner(false, "Refused: " + why + " Nothing changed; the operator actions below say what was seen.");
    }
}
