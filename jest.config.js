/** @type {import('jest').Config} */
module.exports = {
  testEnvironment: 'node',
  roots: ['<rootDir>/test'],
  // Builds dist/ and dist/envoy-shutdown once, before any worker: end-to-end suites run them as processes.
  globalSetup: '<rootDir>/test/global-setup.ts',
  testMatch: ['**/*.test.ts'],
  reporters: ['default', '<rootDir>/test/support/summary-reporter.js'],
  transform: {
    // Type checking happens once in `npm run typecheck`; with `isolatedModules` in tsconfig.json ts-jest
    // transpiles file by file, which keeps jest fast.
    '^.+\\.ts$': 'ts-jest',
  },
  // 2-core machines: the e2e suites spawn processes of their own.
  maxWorkers: 2,
  testTimeout: 30000,
};
