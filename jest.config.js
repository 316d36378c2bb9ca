// Two projects: `unit` (specs beside the source, no servers) and `e2e` (test/, real servers).
// Jest runs NestJS 12 (ESM-only) from this CommonJS project only on Node >= 24.9 with
// --experimental-vm-modules: see package.json scripts.
const transform = { '^.+\\.ts$': ['ts-jest', { tsconfig: 'tsconfig.json' }] };
const common = { moduleFileExtensions: ['js', 'json', 'ts'], rootDir: '.', testEnvironment: 'node', transform };
module.exports = {
  // Slowest files first (test/support/test-sequencer.js), over several workers (scripts/test.sh).
  testSequencer: '<rootDir>/test/support/test-sequencer.js',
  projects: [
    { ...common, displayName: 'unit', testMatch: ['<rootDir>/src/**/*.spec.ts'] },
    {
      ...common,
      displayName: 'e2e',
      testMatch: ['<rootDir>/test/**/*.e2e-spec.ts'],
      // One redis-server and one DynamoDB Local per run (URLs in TEST_REDIS_URL / TEST_DYNAMODB_ENDPOINT).
      globalSetup: '<rootDir>/test/support/global-setup.ts',
      globalTeardown: '<rootDir>/test/support/global-teardown.ts',
    },
  ],
};
