import { join } from 'node:path';

/**
 * The package's root directory (package.json, plugin-host/, demos/, dist/console). This file sits
 * at the top of src/ and of dist/, and the one-file build of the server (dist/cli.js, made by
 * scripts/bundle-vendor.mjs) runs every module with dist/ as its `__dirname`: from all three the
 * root is one level up. Modules deeper in the tree find the root here, never by counting `..`
 * from their own directory, which in the one-file build is not theirs.
 */
export const PACKAGE_ROOT = join(__dirname, '..');
