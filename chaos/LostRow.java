package chaos;

/**
 * A finished row the lost_commit fault deleted; {@code stripeAttempt}: its Stripe attempt (1 for the naive
 * control); {@code deleteStarted}: epoch ms when the DELETE was sent.
 */
record LostRow(String chargeId, String status, int stripeAttempt, long deleteStarted) {
}
