// The kube lane's default test timeout. Jest reads `testTimeout` only from the top-level configuration
// (its projects' own value is ignored), so the lane sets its longer default here, per test file: a test
// against the shared cluster waits on controllers, the scheduler and the kubelet stand-in on a busy
// machine. Tests that take longer still pass their own.
jest.setTimeout(120_000);
