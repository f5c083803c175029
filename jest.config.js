/**
 * Three jest projects ("lanes"), one run. `npm test` runs all (what CI runs); `npm run test:unit` runs
 * only the first, which needs nothing but `npm ci`: no root, no C toolchain, no built drain program.
 * A project's globalSetup runs only when the run holds at least one of that project's tests, so the
 * drain executables are built only for the suites that execute them, and the release only for its own.
 *
 * Which folder goes in which lane is decided here, once; test/unit/test-lanes.test.ts checks that every
 * test file is in exactly one lane and that nothing in the unit lane reaches the modules that hand out
 * the drain executables or need root (docs/development.md, "Tests").
 */

/** Options every project shares (jest does not pass top-level project options down to projects). */
const project = {
  testEnvironment: 'node',
  testMatch: ['**/*.test.ts'],
  transform: {
    // Type checking happens once in `npm run typecheck`; with `isolatedModules` in tsconfig.json ts-jest
    // transpiles file by file, which keeps jest fast.
    '^.+\\.ts$': 'ts-jest',
  },
  testTimeout: 30000,
};

/** Each lane's test folders. */
const LANES = {
  // Pure code and the built CLI (`npm run build`, plain tsc): unit, property and golden suites.
  unit: ['test/unit', 'test/property', 'test/golden'],
  // Real processes, sockets, helm, chroots, the drain program natively and under qemu-user.
  system: ['test/integration', 'test/e2e'],
  // Against the real Kubernetes control plane (test/support/cluster): one test cluster for the run.
  kube: ['test/kube'],
  // `npm run release`'s folder: the single executables natively and under qemu-user, with the real
  // kubectl and helm. Its own project, so that only a run holding these suites builds the release.
  release: ['test/release'],
};

/** @type {import('jest').Config} */
module.exports = {
  projects: [
    {
      ...project,
      displayName: 'unit',
      roots: LANES.unit.map((folder) => `<rootDir>/${folder}`),
      // Builds dist/ (tsc only) for the golden suite's `drainguard inject` processes.
      globalSetup: '<rootDir>/test/global-setup-unit.ts',
    },
    {
      ...project,
      displayName: 'system',
      roots: LANES.system.map((folder) => `<rootDir>/${folder}`),
      // Builds dist/ and both drain executables (needs the toolchain), once, before any worker.
      globalSetup: '<rootDir>/test/global-setup.ts',
    },
    {
      ...project,
      displayName: 'kube',
      roots: LANES.kube.map((folder) => `<rootDir>/${folder}`),
      // Builds dist/, the drain program and the control plane (test/cluster/go.mod, cached), then starts
      // one test cluster that every suite of the lane shares; the teardown stops it.
      globalSetup: '<rootDir>/test/global-setup-kube.ts',
      globalTeardown: '<rootDir>/test/global-teardown-kube.ts',
      testTimeout: 120000,
    },
    {
      ...project,
      displayName: 'release',
      roots: LANES.release.map((folder) => `<rootDir>/${folder}`),
      // `npm run release -- --if-changed` (each executable only when its inputs changed), once, before any worker.
      globalSetup: '<rootDir>/test/global-setup-release.ts',
    },
  ],
  reporters: ['default', '<rootDir>/test/support/summary-reporter.js'],
  // 2-core machines: the e2e suites spawn processes of their own.
  maxWorkers: 2,
  testTimeout: 30000,
};
