package bench;

import java.util.Arrays;
import java.util.List;
import java.util.Locale;

/** How the report writes figures: rates, milliseconds, ratios, CPU sums, targets' rows and distances. */
final class Tables {

    private Tables() {
    }

    static String cpu(double[] c, int... parts) {
        if (c == null) {
            return "–";
        }
        double total = 0;
        StringBuilder b = new StringBuilder();
        for (int part : parts) {
            total += c[part];
            b.append(b.length() == 0 ? "" : " + ").append(String.format(Locale.ROOT, "%.2f", c[part]));
        }
        return String.format(Locale.ROOT, "%.2f (%s)", total, b);
    }

    static String ms(double micros) {
        return Double.isNaN(micros) ? "–" : String.format(Locale.ROOT, "%.2f", micros / 1000.0);
    }

    static String rate(double r) {
        return Double.isNaN(r) ? "–" : String.format(Locale.ROOT, "%,.0f", r);
    }

    static String ratio(double a, double b) {
        return Double.isNaN(a) || Double.isNaN(b) || b == 0 ? "–" : String.format(Locale.ROOT, "%.2f", a / b);
    }

    static double best(Measurement... runs) {
        return Arrays.stream(runs).filter(Measurement::present).mapToDouble(Measurement::rate).max().orElse(Double.NaN);
    }

    static String part(double[] cpu, int index) {
        return cpu == null ? "–" : String.format(Locale.ROOT, "%.3f", cpu[index]);
    }

    static String[] row(String name, String goal, double measured, boolean met) {
        return row(name, goal, measured, met, Double.NaN);
    }

    static String[] row(String name, String goal, double measured, boolean met, double floor) {
        return new String[]{name, goal, Double.isNaN(measured) ? "–" : String.format(Locale.ROOT, "%.2f", measured),
                Double.isNaN(measured) ? "not measured" : met ? "met" : "**missed**",
                Double.isNaN(floor) ? "–" : String.format(Locale.ROOT, "%.2f", floor)};
    }

    /** Answers other than 201 (by status) and socket errors of a refunds run. */
    static String nonCreated(Measurement r) {
        if (!r.present()) {
            return "–";
        }
        StringBuilder b = new StringBuilder();
        for (String k : List.of("s400", "s402", "s404", "s409", "s422", "s503", "other")) {
            if (r.count(k) > 0) {
                b.append(b.length() == 0 ? "" : ", ").append(r.count(k)).append(" × ").append(k.startsWith("s") ? k.substring(1) : k);
            }
        }
        return (b.length() == 0 ? "0" : b.toString()) + " / " + r.errors();
    }

    static String fmt(double v) {
        return String.format(Locale.ROOT, "%.2f", v);
    }

    /** For "at least" ratios: how far above or below the goal, in points of the goal. */
    static String gap(double measured, double goal) {
        if (Double.isNaN(measured)) {
            return "not measured";
        }
        double d = measured - goal;
        return String.format(Locale.ROOT, "%s%.2f (%s%.0f%% of the goal)", d >= 0 ? "+" : "", d, d >= 0 ? "+" : "",
                100 * d / goal);
    }

    static String msGap(double measured, double goal) {
        return Double.isNaN(measured) ? "not measured" : String.format(Locale.ROOT, "%.2f ms %s", Math.abs(goal - measured),
                measured <= goal ? "to spare" : "over");
    }
}
