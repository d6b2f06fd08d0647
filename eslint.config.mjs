import js from '@eslint/js';
import nx from '@nx/eslint-plugin';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['node_modules/**', 'dist/**', 'coverage/**', '.nx/**', '**/*.js', '**/*.mjs'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_' },
      ],
      '@typescript-eslint/consistent-type-imports': 'error',
      eqeqeq: 'error',
    },
  },
  {
    // The dependency rules of docs/ARCHITECTURE.md ("Where things live"), on the project graph Nx
    // reads from the imports: apps are entry points that no one imports; services (projector,
    // worker, gateway) compose infrastructure and the core, never each other; the core depends on
    // nothing but itself. Production code only: tests take shared scaffolding from @baton/testing.
    files: ['apps/*/src/**/*.ts', 'libs/*/src/**/*.ts'],
    ignores: ['**/*.spec.ts'],
    plugins: { '@nx': nx },
    rules: {
      '@nx/enforce-module-boundaries': [
        'error',
        {
          enforceBuildableLibDependency: false,
          allow: [],
          depConstraints: [
            {
              sourceTag: 'type:app',
              onlyDependOnLibsWithTags: ['type:service', 'type:infra', 'type:core', 'type:client'],
            },
            { sourceTag: 'type:service', onlyDependOnLibsWithTags: ['type:infra', 'type:core'] },
            { sourceTag: 'type:infra', onlyDependOnLibsWithTags: ['type:infra', 'type:core'] },
            { sourceTag: 'type:client', onlyDependOnLibsWithTags: ['type:core'] },
            // Test scaffolding (libs/testing) may use anything; no production code may use it.
            { sourceTag: 'type:test', onlyDependOnLibsWithTags: ['*'] },
            {
              sourceTag: 'type:core',
              onlyDependOnLibsWithTags: ['type:core'],
              bannedExternalImports: ['ioredis', 'bullmq', '@nestjs/*', 'ws', 'pino', 'jose'],
            },
          ],
        },
      ],
    },
  },
  {
    // Test scaffolding is for tests and benchmarks only.
    files: ['**/*.ts'],
    ignores: ['**/*.spec.ts', '**/test/**', 'bench/**', 'libs/testing/**'],
    rules: { 'no-restricted-imports': ['error', { paths: ['@baton/testing'] }] },
  },
  {
    // The domain core is pure: no I/O, no clock, no randomness.
    files: [
      'libs/activity/src/**/*.ts',
      'libs/protocol/src/**/*.ts',
      'libs/ahp/src/**/*.ts',
      'libs/transcript/src/**/*.ts',
    ],
    ignores: ['**/*.spec.ts'],
    rules: {
      'no-restricted-globals': ['error', 'setTimeout', 'setInterval', 'performance', 'process'],
      'no-restricted-properties': [
        'error',
        { object: 'Date', property: 'now', message: 'Time enters the domain as entries.' },
        { object: 'Math', property: 'random', message: 'The domain core is deterministic.' },
      ],
      'no-restricted-syntax': [
        'error',
        {
          selector: "NewExpression[callee.name='Date']",
          message: 'Time enters the domain as entries.',
        },
      ],
      'no-restricted-imports': [
        'error',
        { patterns: ['node:*', 'fs', 'net', 'http', 'ioredis', 'bullmq'] },
      ],
    },
  },
);
