package dev.chargeonce.idempotency;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.Test;

/**
 * Every digest is a clone of one SHA-256 instance that is never updated itself: the known vectors of FIPS 180-2,
 * and the same answers from many threads at once (a clone that shared its prototype's state would mix them).
 */
class Sha256HexTest {

    @Test
    void theKnownVectors() {
        assertEquals("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", Fingerprint.sha256Hex(""));
        assertEquals("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad", Fingerprint.sha256Hex("abc"));
        assertEquals("248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1",
                Fingerprint.sha256Hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"));
    }

    @Test
    void manyThreadsAtOnceEachGetTheirOwnDigest() throws Exception {
        String abc = Fingerprint.sha256Hex("abc");
        String empty = Fingerprint.sha256Hex("");
        ExecutorService threads = Executors.newFixedThreadPool(8);
        try {
            List<Future<String>> results = new ArrayList<>();
            for (int i = 0; i < 8; i++) {
                int which = i;
                results.add(threads.submit(() -> {
                    for (int n = 0; n < 20_000; n++) {
                        String text = (n + which) % 2 == 0 ? "abc" : "";
                        String digest = Fingerprint.sha256Hex(text);
                        if (!digest.equals(text.isEmpty() ? empty : abc)) {
                            return "wrong digest of \"" + text + "\": " + digest;
                        }
                    }
                    return "ok";
                }));
            }
            for (Future<String> result : results) {
                assertEquals("ok", result.get());
            }
        } finally {
            threads.shutdownNow();
        }
    }
}
