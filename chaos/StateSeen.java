package chaos;

/** The charge's state as one answer showed it: {@code at} epoch ms, {@code port} the instance, {@code via} what. */
record StateSeen(long at, int port, String status, String via) {
    /** The order charge states only move forward in (ChargeStatus.rank); 0: not a charge state. */
    static int rank(String chargeState) {
        return switch (String.valueOf(chargeState)) {
            case "requires_action" -> 1;
            case "processing" -> 2;
            case "failed" -> 3;
            case "succeeded", "canceled" -> 4;
            default -> 0;
        };
    }

    static boolean finalState(String chargeState) {
        return "succeeded".equals(chargeState) || "canceled".equals(chargeState);
    }
}
