package bench;

import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * {@code bench/run.sh --soak}: the minute-by-minute table of soak.txt as Markdown, and soak.svg, the curve of
 * charges per second against the rows in the table (and the service's resident memory), for the README.
 */
final class Soak {

    record Minute(int minute, double rate, double p50Ms, double p99Ms, double rssMib, double tableMb, long rows,
                  double serviceCpuMs, double pgCpuMs, double walBytes, long checkpoints) {
    }

    static List<Minute> read(Path dir) throws IOException {
        List<Minute> minutes = new ArrayList<>();
        for (String line : Files.readAllLines(dir.resolve("soak.txt"))) {
            String[] f = line.trim().split("\\s+");
            if (f.length < 11 || !f[0].matches("[0-9]+")) {
                continue;
            }
            double made = Double.parseDouble(f[1]) * 60;
            minutes.add(new Minute(Integer.parseInt(f[0]), Double.parseDouble(f[1]), Double.parseDouble(f[2]) / 1000,
                    Double.parseDouble(f[3]) / 1000, Double.parseDouble(f[4]) / 1024, Double.parseDouble(f[5]) / 1e6,
                    Long.parseLong(f[6]), made == 0 ? Double.NaN : Double.parseDouble(f[7]) / made,
                    made == 0 ? Double.NaN : Double.parseDouble(f[8]) / made, made == 0 ? Double.NaN : Double.parseDouble(f[9]) / made,
                    Long.parseLong(f[10])));
        }
        return minutes;
    }

    static void report(Path dir, PrintStream out) throws IOException {
        List<Minute> minutes = read(dir);
        out.println("| minute | charges/s | p50 ms | p99 ms | rows at the end | table + indexes | service CPU ms/charge | PostgreSQL CPU ms/charge | WAL bytes/charge | checkpoints so far | service RSS |");
        out.println("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
        for (Minute m : minutes) {
            out.printf(Locale.ROOT, "| %d | %,.0f | %.2f | %.2f | %,d | %,.0f MB | %.3f | %.3f | %,.0f | %d | %.0f MiB |%n", m.minute(), m.rate(),
                    m.p50Ms(), m.p99Ms(), m.rows(), m.tableMb(), m.serviceCpuMs(), m.pgCpuMs(), m.walBytes(), m.checkpoints(), m.rssMib());
        }
        Files.writeString(dir.resolve("soak.svg"), svg(minutes));
        out.println();
        out.println("Plot: soak.svg (charges per second and resident memory, minute by minute, against the rows in the table).");
    }

    /**
     * Two soaks side by side (e.g. before and after a change, each from {@code bench/run.sh --soak}): a summary table
     * (the whole soak after its first minute, and its last five minutes) and one chart over the rows in the table,
     * charges/s on the left axis and WAL bytes per charge on the right, so that a decay shows where it starts.
     */
    static void compare(Path beforeDir, Path afterDir, Path svgFile, PrintStream out) throws IOException {
        List<Minute> before = read(beforeDir), after = read(afterDir);
        out.println("| soak | minutes | rows at the end | table + indexes | charges/s (min 2 to end) | last 5 min | PostgreSQL CPU ms/charge | last 5 min | WAL bytes/charge | last 5 min | service CPU ms/charge | p99 ms (median of minutes) |");
        out.println("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
        summary(out, "before", before);
        summary(out, "after", after);
        Files.writeString(svgFile, compareSvg(before, after));
    }

    static void summary(PrintStream out, String name, List<Minute> minutes) {
        List<Minute> steady = minutes.stream().filter(m -> m.minute() >= 2).toList();
        List<Minute> last = steady.subList(Math.max(0, steady.size() - 5), steady.size());
        Minute end = minutes.get(minutes.size() - 1);
        double[] p99 = steady.stream().mapToDouble(Minute::p99Ms).sorted().toArray();
        out.printf(Locale.ROOT, "| %s | %d | %,d | %,.0f MB | %,.0f | %,.0f | %.3f | %.3f | %,.0f | %,.0f | %.3f | %.0f |%n", name, end.minute(),
                end.rows(), end.tableMb(), mean(steady, Minute::rate), mean(last, Minute::rate),
                perCharge(steady, Minute::pgCpuMs), perCharge(last, Minute::pgCpuMs), perCharge(steady, Minute::walBytes),
                perCharge(last, Minute::walBytes), perCharge(steady, Minute::serviceCpuMs), p99[p99.length / 2]);
    }

    static double mean(List<Minute> minutes, java.util.function.ToDoubleFunction<Minute> f) {
        return minutes.stream().mapToDouble(f).average().orElse(Double.NaN);
    }

    /** A per-charge figure over several minutes, weighted by the charges of each minute. */
    static double perCharge(List<Minute> minutes, java.util.function.ToDoubleFunction<Minute> f) {
        double made = minutes.stream().mapToDouble(Minute::rate).sum();
        return minutes.stream().mapToDouble(m -> f.applyAsDouble(m) * m.rate()).sum() / made;
    }

    static String compareSvg(List<Minute> before, List<Minute> after) {
        return chart(380, 80, 48, "New charges at concurrency 16, minute by minute, before and after (bench/run.sh --soak)",
                "<tspan fill=\"#1f77b4\">charges/s after</tspan> · <tspan fill=\"#7f7f7f\">charges/s before</tspan> · <tspan fill=\"#d62728\">WAL bytes/charge after</tspan> · <tspan fill=\"#ff9896\">WAL bytes/charge before</tspan> (dashed)",
                "WAL bytes per charge", "%,.0f", List.of(
                        new Line(before, Minute::rate, false, "#7f7f7f", false), new Line(after, Minute::rate, false, "#1f77b4", false),
                        new Line(before, Minute::walBytes, true, "#ff9896", true), new Line(after, Minute::walBytes, true, "#d62728", true)));
    }

    /** A line chart with no library: charges/s (left axis) and RSS (right axis) over the rows in the table. */
    static String svg(List<Minute> minutes) {
        return chart(360, 70, 30, "New charges at concurrency 16, minute by minute (bench/run.sh --soak)", null,
                "service RSS, MiB", "%.0f", List.of(new Line(minutes, Minute::rate, false, "#1f77b4", false),
                        new Line(minutes, Minute::rssMib, true, "#d62728", false)));
    }

    /** One series of a chart: a value per minute, on the left axis (charges/s) or the right one. */
    record Line(List<Minute> minutes, java.util.function.ToDoubleFunction<Minute> value, boolean right, String color,
                boolean dashed) {
    }

    /** Lines over the rows in the table: charges/s on the left axis, {@code rightLabel} on the right. */
    static String chart(int h, int right, int top, String title, String legend, String rightLabel, String rightTicks,
                        List<Line> lines) {
        int w = 760, left = 70, bottom = 50;
        double maxRows = Math.max(1, lines.stream().flatMap(l -> l.minutes().stream()).mapToLong(Minute::rows).max().orElse(1));
        double maxLeft = Math.max(1, lines.stream().filter(l -> !l.right())
                .flatMapToDouble(l -> l.minutes().stream().mapToDouble(l.value())).max().orElse(1)) * 1.15;
        double maxRight = Math.max(1, lines.stream().filter(Line::right)
                .flatMapToDouble(l -> l.minutes().stream().mapToDouble(l.value())).max().orElse(1)) * 1.15;
        java.util.function.DoubleUnaryOperator x = r -> left + r / maxRows * (w - left - right);
        java.util.function.DoubleUnaryOperator yLeft = r -> top + (1 - r / maxLeft) * (h - top - bottom);
        java.util.function.DoubleUnaryOperator yRight = r -> top + (1 - r / maxRight) * (h - top - bottom);
        StringBuilder b = new StringBuilder();
        b.append(String.format(Locale.ROOT, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" font-family=\"sans-serif\" font-size=\"12\">%n", w, h));
        b.append(String.format(Locale.ROOT, "<rect width=\"%d\" height=\"%d\" fill=\"white\"/>%n", w, h));
        b.append(String.format(Locale.ROOT, "<text x=\"%d\" y=\"18\" font-size=\"14\">%s</text>%n", left, title));
        if (legend != null) {
            b.append(String.format(Locale.ROOT, "<text x=\"%d\" y=\"36\">%s</text>%n", left, legend));
        }
        for (int i = 0; i <= 5; i++) {
            double rate = maxLeft * i / 5, rows = maxRows * i / 5, other = maxRight * i / 5;
            b.append(String.format(Locale.ROOT, "<line x1=\"%d\" x2=\"%d\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>%n", left, w - right, yLeft.applyAsDouble(rate), yLeft.applyAsDouble(rate)));
            b.append(String.format(Locale.ROOT, "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\" fill=\"#1f77b4\">%,.0f</text>%n", left - 6, yLeft.applyAsDouble(rate) + 4, rate));
            b.append(String.format(Locale.ROOT, "<text x=\"%d\" y=\"%.1f\" fill=\"#d62728\">" + rightTicks + "</text>%n", w - right + 6, yRight.applyAsDouble(other) + 4, other));
            b.append(String.format(Locale.ROOT, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%,.0f</text>%n", x.applyAsDouble(rows), h - bottom + 18, rows));
        }
        b.append(String.format(Locale.ROOT, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">rows in stripe_intents</text>%n", (w + left - right) / 2, h - 10));
        b.append(String.format(Locale.ROOT, "<text x=\"14\" y=\"%d\" fill=\"#1f77b4\" transform=\"rotate(-90 14 %d)\" text-anchor=\"middle\">charges/s</text>%n", h / 2, h / 2));
        b.append(String.format(Locale.ROOT, "<text x=\"%d\" y=\"%d\" fill=\"#d62728\" transform=\"rotate(90 %d %d)\" text-anchor=\"middle\">%s</text>%n", w - 14, h / 2, w - 14, h / 2, rightLabel));
        for (Line line : lines) {
            java.util.function.DoubleUnaryOperator y = line.right() ? yRight : yLeft;
            String drawn = polyline(line.minutes(), m -> x.applyAsDouble(m.rows()), m -> y.applyAsDouble(line.value().applyAsDouble(m)), line.color());
            b.append(line.dashed() ? drawn.replace("/>", " stroke-dasharray=\"6 4\"/>") : drawn);
        }
        b.append("</svg>\n");
        return b.toString();
    }

    static String polyline(List<Minute> minutes, java.util.function.ToDoubleFunction<Minute> x, java.util.function.ToDoubleFunction<Minute> y,
                           String color) {
        StringBuilder points = new StringBuilder();
        for (Minute m : minutes) {
            points.append(String.format(Locale.ROOT, "%.1f,%.1f ", x.applyAsDouble(m), y.applyAsDouble(m)));
        }
        return String.format(Locale.ROOT, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\" points=\"%s\"/>%n", color, points.toString().trim());
    }
}
