package dev.chargeonce.testing;

import java.nio.charset.StandardCharsets;
import java.util.Base64;

/** The operator every test environment that opens the console or the admin API configures (tests only). */
public final class TestOperators {

    public static final String NAME = "ops";
    public static final String PASSWORD = "ops-test-password";

    private TestOperators() {
    }

    /** The bcrypt hash of {@link #PASSWORD} (cost 10), as {@code %test.chargeonce.auth.operators} has it. */
    public static final String HASH = "$2a$10$h9OseNwixTKkE80bOm8Df.xNe9tnN/Iws.Lv4ecQ/qEpnVJkBYDZm";

    /** The value of {@code chargeonce.auth.operators} for this operator. */
    public static String config() {
        return NAME + ":" + HASH;
    }

    /** The operator's {@code Authorization} header. */
    public static String basic() {
        return basic(NAME, PASSWORD);
    }

    public static String basic(String name, String password) {
        return "Basic " + Base64.getEncoder().encodeToString((name + ":" + password).getBytes(StandardCharsets.UTF_8));
    }
}
