package dev.chargeonce.kafka;

/** This process' name in client ids (the host and pid: distinct per instance, readable in the broker's logs). */
final class Instances {

    static final String NAME = host() + "-" + ProcessHandle.current().pid();

    private Instances() {
    }

    private static String host() {
        String host = System.getenv("HOSTNAME");
        return host == null || host.isBlank() ? "local" : host;
    }
}
