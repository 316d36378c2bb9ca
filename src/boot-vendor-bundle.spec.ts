import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { useVendorBundle } from './boot-vendor-bundle';

describe('useVendorBundle', () => {
  const dirs: string[] = [];
  afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));
  const dir = () => {
    const d = mkdtempSync(join(tmpdir(), 'ta-nest-bundle-'));
    dirs.push(d);
    return d;
  };

  it('changes nothing without a bundle (a plain tsc build): Nest loads from node_modules', () => {
    expect(useVendorBundle(dir())).toBe(false);
  });
  // With a bundle it registers a resolve hook, which Jest refuses: test/e2e/boot-footprint.e2e-spec.ts
  // boots the built server and checks Nest is loaded from the bundle only.
});
