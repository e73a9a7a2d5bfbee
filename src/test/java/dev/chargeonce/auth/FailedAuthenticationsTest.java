package dev.chargeonce.auth;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The throttle's counting, apart from HTTP (AuthenticationThrottleIT tries it as an attacker would). */
class FailedAuthenticationsTest {

    private final FailedAuthentications failures = new FailedAuthentications(3, Duration.ofMinutes(1));

    @Test
    void aSubjectIsOverTheLimitOnceItFailedLimitTimesAndOnlyThatSubject() {
        List<String> guesser = List.of(FailedAuthentications.address("198.51.100.1"), "operator ops");
        for (int i = 0; i < 2; i++) {
            failures.failed(guesser);
            assertTrue(failures.overLimit(guesser).isEmpty());
        }
        failures.failed(guesser);
        assertTrue(failures.overLimit(guesser).isPresent());
        assertTrue(failures.overLimit(List.of("operator ops")).isPresent(), "the name is over the limit");
        assertTrue(failures.overLimit(List.of(FailedAuthentications.address("198.51.100.2"))).isEmpty(), "another address is not");
        assertTrue(failures.overLimit(guesser).get().compareTo(Duration.ofMinutes(1)) <= 0);
    }

    @Test
    void overTheLimitAPasswordIsCheckedOnceASecond() throws InterruptedException {
        List<String> guesser = List.of("operator ops");
        assertTrue(failures.mayCheck(guesser), "under the limit, always");
        assertTrue(failures.mayCheck(guesser));
        for (int i = 0; i < 3; i++) {
            failures.failed(guesser);
        }
        assertTrue(failures.mayCheck(guesser), "the second's first check");
        assertFalse(failures.mayCheck(guesser), "the rest of that second: unchecked");
        assertFalse(failures.mayCheck(List.of(FailedAuthentications.address("198.51.100.3"), "operator ops")),
                "whichever address asks");
        Thread.sleep(1_100);
        assertTrue(failures.mayCheck(guesser), "the next second's");
    }

    @Test
    void aFloodOfMadeUpIdentitiesFillsNoMemoryButItsAddressIsStillCounted() {
        FailedAuthentications small = new FailedAuthentications(3, Duration.ofMinutes(1));
        String address = FailedAuthentications.address("198.51.100.4");
        for (int i = 0; i < 100_010; i++) {
            small.failed(List.of(address, "api-key " + i));
        }
        assertTrue(small.overLimit(List.of(address)).isPresent());
        assertTrue(small.overLimit(List.of("api-key 100005")).isEmpty(), "past the cap, new identities are not tracked");
        assertTrue(small.overLimit(List.of("api-key 5")).isEmpty(), "one failure each");
    }
}
