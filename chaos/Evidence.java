package chaos;

import static chaos.Chaos.results;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

/**
 * The evidence behind a run's figures ({@code <target>-audit.txt}): the examples the audit noted, the most serious
 * kinds first, and the service's own log lines about a charge, read out of every instance's every start.
 */
final class Evidence {

    private Evidence() {
    }

    /** Every kind of finding with its examples, the most serious first; then the fault switches that failed. */
    static String text(Audit a) {
        StringBuilder out = new StringBuilder();
        for (String kind : List.of("DUPLICATE", "LOSS", "CHARGED BUT TOLD OTHERWISE", "ROW/STRIPE DISAGREE",
                "REFUND DUPLICATE", "OVER-REFUND", "TOLD REFUNDED, STRIPE HAS NO SUCH REFUND",
                "REFUNDED AT STRIPE, CLIENT TOLD OTHERWISE", "REFUSED BEFORE STRIPE, YET SENT",
                "REFUSED AMOUNT_TOO_LARGE WITH ENOUGH LEFT", "ORPHAN REFUND", "REFUND ROW NOT TERMINAL",
                "REFUND WITHOUT A FINAL ANSWER", "REFUND ROW MISSING", "REFUND REPLAY DIFFERS",
                "REFUND ROW HOLDS ANOTHER ANSWER", "REFUND ROW/STRIPE DISAGREE", "RESERVATION DIFFERS FROM REFUNDS",
                "REFUND KEY REUSE ACCEPTED", "UNEXPECTED REFUND ANSWER", "UNKNOWN EVENT OF A KNOWN REFUND",
                "CHARGE STATE DIFFERS FROM STRIPE", "CHARGE STATE MOVED BACKWARDS", "UNKNOWN EVENT OF A KNOWN CHARGE",
                "EVENT NEVER RECORDED", "REFUND EVENT NEVER RECORDED", "WEBHOOK REFUSED",
                "REPLAY DIFFERS", "ANSWER AFTER LOST ROW DIFFERS", "ANSWER OF AN UNKNOWN ROW", "ROW HOLDS ANOTHER ANSWER",
                "KEY REUSE ACCEPTED", "READ AFTER SUCCESS NOT FOUND", "READ AFTER SUCCESS DIFFERS", "NO FINAL ANSWER",
                "ROW MISSING", "ROW NOT TERMINAL", "UNEXPECTED FINAL ANSWER", "ORPHAN PAYMENTINTENT",
                "PARKED AFTER LOST COMMIT", "RECOVERED AFTER LOST COMMIT", "READ OF A DELETED ROW",
                "UNKNOWN EVENT WHILE THE ROW WAS LOST", "CUSTOMER TOO LATE", "REFUND PARKED", "REFUND OF A LOST CHARGE ROW",
                "UNFOLLOWED EVENT NEVER RECORDED")) {
            List<String> examples = a.evidence.get(kind);
            if (examples != null) {
                out.append("== ").append(kind).append(" (first ").append(examples.size()).append(")\n");
                examples.forEach(e -> out.append(e).append('\n'));
            }
        }
        if (!a.switchFailures.isEmpty()) {
            out.append("== FAULT SWITCHES THAT FAILED\n");
            a.switchFailures.forEach(e -> out.append(e).append('\n'));
        }
        return out.toString();
    }

    /** The service's log lines (every instance, every start) that name a charge or its PaymentIntent: at most 40. */
    static String logLines(String... needles) {
        StringBuilder out = new StringBuilder("\n  service log lines:");
        int n = 0;
        try (var files = Files.list(results.resolve("logs"))) {
            for (Path file : files.filter(f -> f.getFileName().toString().startsWith("chargeonce-")).sorted().toList()) {
                for (String line : Files.readAllLines(file, StandardCharsets.ISO_8859_1)) {
                    for (String needle : needles) {
                        if (needle != null && line.contains(needle)) {
                            if (n++ < 40) {
                                out.append("\n    ").append(file.getFileName()).append(": ").append(line);
                            }
                            break;
                        }
                    }
                }
            }
        } catch (IOException e) {
            out.append(" (").append(e.getMessage()).append(")");
        }
        return out.toString();
    }
}
