package dev.chargeonce.console;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.chargeonce.reconcile.OperatorActions.Kind;
import java.util.Optional;
import org.junit.jupiter.api.Test;

/** Every outcome has a banner of fixed words named by a plain id; anything else names none. */
class BannersTest {

    @Test
    void everyOutcomeHasABannerItsIdNamesAgain() {
        for (Kind kind : Kind.values()) {
            String id = Banners.id(kind);
            assertTrue(id.matches("[a-z]+(-[a-z]+)*"), id);
            assertEquals(Optional.of(Banners.banner(kind)), Banners.byId(id));
            assertEquals(kind.ordinal() < Kind.REASON_REQUIRED.ordinal(), Banners.banner(kind).done(), kind.name());
        }
    }

    @Test
    void anythingElseNamesNoBanner() {
        for (String id : new String[] {null, "", "ATTACHED", "attached ", "Attached", "moved;", "<script>alert(1)</script>",
                "finding 17 acknowledged"}) {
            assertEquals(Optional.empty(), Banners.byId(id), String.valueOf(id));
        }
    }
}
