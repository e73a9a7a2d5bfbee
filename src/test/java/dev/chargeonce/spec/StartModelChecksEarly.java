package dev.chargeonce.spec;

import org.junit.platform.engine.support.descriptor.MethodSource;
import org.junit.platform.launcher.TestExecutionListener;
import org.junit.platform.launcher.TestPlan;

/**
 * Starts the model's checks (minutes of SAT solving in processes of their own) as soon as a test run that holds
 * {@link ProtocolModelTest#everyCheckHasItsExpectedResult} (or {@link GuardMutationTest#everyLoadBearingGuardIsCaught}) begins, so that they run beside the other tests, not
 * after them; the test then collects their results. A run without that test starts nothing. Registered in
 * {@code META-INF/services/org.junit.platform.launcher.TestExecutionListener}.
 */
public class StartModelChecksEarly implements TestExecutionListener {

    @Override
    public void testPlanExecutionStarted(TestPlan plan) {
        boolean planned = plan.getRoots().stream()
                .flatMap(root -> plan.getDescendants(root).stream())
                .anyMatch(test -> test.getSource()
                        .filter(MethodSource.class::isInstance)
                        .map(MethodSource.class::cast)
                        .filter(m -> (m.getClassName().equals(ProtocolModelTest.class.getName())
                                        && m.getMethodName().equals("everyCheckHasItsExpectedResult"))
                                || (m.getClassName().equals(GuardMutationTest.class.getName())
                                        && m.getMethodName().equals("everyLoadBearingGuardIsCaught")))
                        .isPresent());
        if (planned) {
            try {
                ProtocolModelTest.startChecks();
            } catch (Exception e) {
                // The test starts them again and reports what is wrong.
            }
        }
    }
}
