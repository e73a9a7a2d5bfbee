package dev.chargeonce.testing;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * {@link ServiceProcess} for shell scripts ({@code bench/lib.sh start_chargeonce}): starts the packaged service, waits
 * until it is ready, prints its pid and exits, leaving it running (the script stops it by its pid). On a failure it
 * kills what it started, says why on stderr and exits 1. JDK only, like {@link ServiceProcess}: the scripts compile
 * both with plain {@code javac}.
 *
 * <pre>
 * java -cp &lt;classes&gt; dev.chargeonce.testing.ServiceLauncher --log FILE --port P --management-port M
 *      [--jar quarkus-run.jar] [--timeout 90s] [--jvm-option OPTION]... [property=value]...
 * </pre>
 */
public final class ServiceLauncher {

    private ServiceLauncher() {
    }

    public static void main(String[] args) {
        ServiceProcess.Builder service = ServiceProcess.builder("service");
        List<String> jvmOptions = new ArrayList<>();
        Duration timeout = Duration.ofSeconds(90);
        for (int i = 0; i < args.length; i++) {
            String arg = args[i];
            switch (arg) {
                case "--log" -> service.logFile(Path.of(args[++i]));
                case "--port" -> service.port(Integer.parseInt(args[++i]));
                case "--management-port" -> service.managementPort(Integer.parseInt(args[++i]));
                case "--jar" -> service.jar(Path.of(args[++i]));
                case "--timeout" -> timeout = Duration.ofSeconds(Long.parseLong(args[++i].replaceFirst("s$", "")));
                case "--jvm-option" -> jvmOptions.add(args[++i]);
                default -> {
                    int eq = arg.indexOf('=');
                    if (arg.startsWith("-") || eq <= 0) {
                        System.err.println("ServiceLauncher: unknown argument " + arg);
                        System.exit(2);
                    }
                    service.config(Map.of(arg.substring(0, eq), arg.substring(eq + 1)));
                }
            }
        }
        if (!jvmOptions.isEmpty()) {
            service.jvmOptions(jvmOptions);
        }
        ServiceProcess process = service.build();
        try {
            process.startProcess(timeout);
        } catch (IllegalStateException e) {
            process.close();
            System.err.println(e.getMessage());
            System.exit(1);
        }
        System.out.println(process.pid());
        System.exit(0); // the service runs on, a child of nobody now: the script stops it by its pid
    }
}
