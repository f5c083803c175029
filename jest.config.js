/** @type {import('jest').Config} */
module.exports = {
  testEnvironment: 'node',
  roots: ['<rootDir>/test'],
  testMatch: ['**/*.test.ts'],
  transform: {
    // Type checking happens once in `npm run typecheck`; per-file transpilation keeps jest fast.
    '^.+\\.ts$': ['ts-jest', { isolatedModules: true }],
  },
  // 2-core machines: the e2e suites spawn processes of their own.
  maxWorkers: 2,
  testTimeout: 30000,
};
