package bench;

import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Where a CPU profile's samples go, by library: reads async-profiler's HTML flame graphs (their frame pool and the
 * f/u/n calls that lay the frames out) and counts each frame's self samples under the innermost frame on its
 * stack that belongs to a known library (the JDK frames a library calls count as that library's).
 */
final class FlameShares {

    static final Map<String, Pattern> LIBRARIES = new LinkedHashMap<>();
    static {
        LIBRARIES.put("Stripe SDK + JDK HTTP client", Pattern.compile("com[./]stripe|jdk[./]internal[./]net[./]http|java[./]net[./]http"));
        LIBRARIES.put("pgjdbc + Agroal", Pattern.compile("org[./]postgresql|io[./]agroal"));
        LIBRARIES.put("SmallRye Fault Tolerance", Pattern.compile("io[./]smallrye[./]faulttolerance"));
        LIBRARIES.put("virtual-thread timers (DelayScheduler)", Pattern.compile("DelayScheduler|ScheduledThreadPoolExecutor|VirtualThread[./]parkNanos"));
        LIBRARIES.put("Vert.x / Netty / RESTEasy", Pattern.compile("io[./]vertx|io[./]netty|org[./]jboss[./]resteasy"));
        LIBRARIES.put("Jackson", Pattern.compile("com[./]fasterxml[./]jackson"));
        LIBRARIES.put("Micrometer", Pattern.compile("io[./]micrometer"));
        LIBRARIES.put("service code (dev.chargeonce)", Pattern.compile("dev[./]chargeonce"));
        LIBRARIES.put("GC", Pattern.compile("^G1|GCTask|GangWorker|ConcurrentGCThread|G1ConcurrentRefine|WorkerThread::run"));
        LIBRARIES.put("virtual-thread scheduler (ForkJoinPool, continuations)", Pattern.compile("ForkJoinPool|Continuation|thaw|freeze"));
        LIBRARIES.put("JIT compiler", Pattern.compile("CompileBroker|C2Compiler|Compile::"));
    }

    record Frame(int level, long width, String title) {
    }

    static void print(List<Path> graphs, PrintStream out) throws IOException {
        List<Map<String, Double>> shares = new ArrayList<>();
        for (Path graph : graphs) {
            shares.add(shares(frames(Files.readString(graph))));
        }
        out.println("| library | " + String.join(" | ", graphs.stream().map(g -> g.getFileName().toString()).toList()) + " |");
        out.println("|---" + "|---:".repeat(graphs.size()) + "|");
        List<String> names = new ArrayList<>(LIBRARIES.keySet());
        names.add("other");
        for (String name : names) {
            StringBuilder row = new StringBuilder("| " + name + " |");
            for (Map<String, Double> s : shares) {
                row.append(String.format(Locale.ROOT, " %.1f%% |", s.getOrDefault(name, 0.0)));
            }
            out.println(row);
        }
    }

    static List<Frame> frames(String html) {
        int start = html.indexOf("const cpool = [") + "const cpool = [".length();
        List<String> pool = new ArrayList<>();
        for (String line : html.substring(start, html.indexOf("\n];", start)).strip().split("\n")) {
            String quoted = line.strip();
            quoted = quoted.endsWith(",") ? quoted.substring(0, quoted.length() - 1) : quoted;
            String text = quoted.substring(1, quoted.length() - 1).replace("\\'", "'").replace("\\\\", "\\");
            // each entry shares a prefix with the one before: its first character says how long (+32)
            pool.add(pool.isEmpty() ? text : pool.get(pool.size() - 1).substring(0, text.charAt(0) - 32) + text.substring(1));
        }
        List<Frame> frames = new ArrayList<>();
        Matcher call = Pattern.compile("(?m)^([fun])\\(([^)]*)\\)").matcher(html.substring(html.indexOf("unpack(cpool);")));
        int level = 0;
        long width = 0;
        while (call.find()) {
            long[] a = Arrays.stream(call.group(2).split(",")).map(String::strip).filter(x -> !x.isEmpty()).mapToLong(Long::parseLong).toArray();
            int key = (int) a[0];
            long w;
            switch (call.group(1)) {
                case "f" -> { level = (int) a[1]; w = a.length > 3 ? a[3] : 0; }
                case "u" -> { level = level + 1; w = a.length > 1 ? a[1] : 0; }
                default -> w = a.length > 1 ? a[1] : 0;
            }
            width = w != 0 ? w : width;
            frames.add(new Frame(level, width, pool.get(key >>> 3)));
        }
        return frames;
    }

    /** Per cent of all samples under each library (frames are in depth-first order, a frame's level its depth). */
    static Map<String, Double> shares(List<Frame> frames) {
        long total = frames.stream().filter(f -> f.level() == 0).mapToLong(Frame::width).sum();
        long[] self = frames.stream().mapToLong(Frame::width).toArray();
        int[] parents = new int[64 * 1024];
        for (int i = 0; i < frames.size(); i++) {
            Frame f = frames.get(i);
            parents[f.level()] = i;
            if (f.level() > 0) {
                self[parents[f.level() - 1]] -= f.width();
            }
        }
        String[] libraryAt = new String[64 * 1024];
        Map<String, Double> shares = new LinkedHashMap<>();
        for (int i = 0; i < frames.size(); i++) {
            Frame f = frames.get(i);
            String library = null;
            for (Map.Entry<String, Pattern> e : LIBRARIES.entrySet()) {
                if (e.getValue().matcher(f.title()).find()) {
                    library = e.getKey();
                    break;
                }
            }
            if (library == null) {
                library = f.level() > 0 ? libraryAt[f.level() - 1] : null;
            }
            libraryAt[f.level()] = library;
            shares.merge(library == null ? "other" : library, 100.0 * self[i] / total, Double::sum);
        }
        return shares;
    }
}
