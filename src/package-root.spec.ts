import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { PACKAGE_ROOT } from './package-root';

describe('PACKAGE_ROOT', () => {
  it("is this package's root: its package.json, and the files shipped beside dist/", () => {
    expect((JSON.parse(readFileSync(join(PACKAGE_ROOT, 'package.json'), 'utf8')) as { name: string }).name).toBe('teal-agent-server');
    expect(readFileSync(join(PACKAGE_ROOT, 'plugin-host', 'teal_plugin_host.py'), 'utf8')).toContain('def ');
  });
});
