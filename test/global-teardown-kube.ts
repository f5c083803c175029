/**
 * The kube project's teardown: closes the test cluster owner's standard input (its lifeline), which makes
 * it stop every process, network namespace and bridge it started, and waits until it has.
 */
export default async function globalTeardown(): Promise<void> {
  const child = globalThis.drainguardTestCluster;
  if (!child || child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.stdin?.end();
  await exited;
}
