package chaos;

/**
 * The two targets the same chaos runs against: chargeonce (the packaged service) and the deliberately naive
 * check-then-act control (NaiveService). Each has a database of its own on the same PostgreSQL.
 */
enum Variant {
    CHARGEONCE("chargeonce", "chargeonce", "/q/health/ready"),
    NAIVE("naive check-then-act", "naive", "/health");

    final String label;
    final String database;
    final String readyPath;

    Variant(String label, String database, String readyPath) {
        this.label = label;
        this.database = database;
        this.readyPath = readyPath;
    }
}
