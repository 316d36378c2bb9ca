// @ts-check
// ESLint after the NestJS starter's: @eslint/js and typescript-eslint recommended, with
// eslint-config-prettier last, since Prettier owns the layout (its own check, `npm run format:check`,
// rather than a lint rule). Not type-aware, for its cost on 2 cores: docs/testing.md, Formatting and lint.
import eslint from '@eslint/js';
import prettier from 'eslint-config-prettier';
import { defineConfig } from 'eslint/config';
import globals from 'globals';
import tseslint from 'typescript-eslint';

export default defineConfig(
  // Built, installed and generated files, and what tests leave behind (the same as .gitignore).
  { ignores: ['dist/', 'dist-bench/', '.tools/', 'coverage/', 'test-artifacts/', '.ddb/', '.test-services/', '.nest-start-*/'] },
  eslint.configs.recommended,
  tseslint.configs.recommended,
  {
    linterOptions: { reportUnusedDisableDirectives: 'error' },
    languageOptions: { globals: { ...globals.node, ...globals.jest } },
    rules: {
      // An unused parameter, variable or caught error is named `_…` when it is there on purpose
      // (an interface's default method, a destructured field left out, a value a test ignores).
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrorsIgnorePattern: '^_', destructuredArrayIgnorePattern: '^_' },
      ],
      // require() inside a function is deliberate here, twice over: `require('x') as typeof
      // import('x')` defers a module until it is needed (zod, the OpenAI SDK, the AG-UI encoder,
      // OTLP exporters, the store backends…), keeping it off the boot path whose heap and time are
      // measured (scripts/measure-startup.sh), with the type still from the import; and a user's
      // plugin or custom types file is loaded by path (Node 24 requires TypeScript and ES modules).
      // So require() is allowed inside a function and refused at a module's top level, where an
      // import does the same.
      '@typescript-eslint/no-require-imports': 'off',
      'no-restricted-syntax': [
        'error',
        {
          selector: 'CallExpression[callee.name="require"]:not(:function CallExpression)',
          message: 'Use an import at the top level; require() only inside a function, to defer loading a module.',
        },
      ],
    },
  },
  {
    // CommonJS files (bin/, jest.config.js, test/support/*.cjs): require() is their module system.
    files: ['**/*.js', '**/*.cjs'],
    ignores: ['demos/mcp/**'],
    languageOptions: { sourceType: 'commonjs' },
    rules: { 'no-restricted-syntax': 'off' },
  },
  {
    // The web console reads the server's JSON as it comes (its shapes are docs/api.md's, and the
    // console's browser tests check what it shows), so `any` marks that wire data.
    files: ['console/src/**'],
    languageOptions: { globals: { ...globals.browser } },
    rules: { '@typescript-eslint/no-explicit-any': 'off' },
  },
  prettier,
);
