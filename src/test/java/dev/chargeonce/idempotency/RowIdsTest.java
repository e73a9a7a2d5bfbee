package dev.chargeonce.idempotency;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;

/**
 * Row ids: well formed as before, unique, and ordered by creation time so the primary key grows at its right edge;
 * a charge's id is its key identity's, the same whenever the key is claimed anew.
 */
class RowIdsTest {

    @Test
    void idsAreWellFormedAndUnique() {
        Set<String> seen = new HashSet<>();
        for (int i = 0; i < 100_000; i++) {
            String id = RowIds.next("chg_");
            assertTrue(RowIds.wellFormed("chg_", id), id);
            assertTrue(seen.add(id), "an id came twice: " + id);
        }
    }

    @Test
    void idsSortByCreationTimeWhateverTheRandomPart() {
        List<String> ids = new ArrayList<>();
        long start = 1_796_000_000_000L; // 2026-12
        for (int i = 0; i < 1000; i++) {
            ids.add(RowIds.next("chg_", start + i * 997L));
        }
        List<String> sorted = new ArrayList<>(ids);
        sorted.sort(null); // binary order; the time part has digits and lower case only, so any collation agrees
        assertEquals(ids, sorted);
        for (String id : ids) {
            assertTrue(id.substring(4, 13).chars().allMatch(c -> (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z')), id);
        }
        // and the same millisecond still gives different ids
        assertFalse(RowIds.next("chg_", start).equals(RowIds.next("chg_", start)));
    }

    @Test
    void theRandomPartUsesTheWholeAlphabet() {
        Set<Character> seen = new HashSet<>();
        for (int i = 0; i < 2000; i++) {
            String id = RowIds.next("rfd_");
            for (char c : id.substring(13).toCharArray()) {
                seen.add(c);
            }
        }
        assertEquals(62, seen.size(), "every letter and digit appears in the random part");
    }

    @Test
    void anIdentitysIdIsAlwaysTheSameWellFormedAndItsOwn() {
        Set<String> seen = new HashSet<>();
        for (int i = 0; i < 20_000; i++) {
            String identity = "k001-" + Fingerprint.sha256Hex("identity " + i).substring(0, 43);
            String id = RowIds.ofIdentity("chg_", identity);
            assertEquals(id, RowIds.ofIdentity("chg_", identity), "a function of the identity alone");
            assertTrue(RowIds.wellFormed("chg_", id), id);
            assertTrue(seen.add(id), "two identities, one id: " + id);
        }
        assertFalse(RowIds.ofIdentity("chg_", "k001-a").substring(4).equals(RowIds.ofIdentity("rfd_", "k001-a").substring(4)));
    }

    @Test
    void idsOfTheEarlierSchemeAreStillWellFormed() {
        assertTrue(RowIds.wellFormed("chg_", "chg_Zx8Qq0aB1cD2eF3gH4iJ5kL6"));
        assertFalse(RowIds.wellFormed("chg_", "chg_short"));
        assertFalse(RowIds.wellFormed("chg_", "chg_r1-svc-c16_0000000000000"));
    }
}
