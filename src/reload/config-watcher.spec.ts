import { mkdtempSync, renameSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { configDigest, watchConfig } from './config-watcher';

const quiet = pino({ level: 'silent' });
const settle = () => new Promise((r) => setTimeout(r, 900));

describe('watchConfig', () => {
  it('reports a burst of writes once, and an event that changed no contents not at all', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'ta-watch-'));
    writeFileSync(join(dir, 'a.yaml'), 'one');
    let changes = 0;
    const watcher = watchConfig(dir, () => changes++, quiet);
    try {
      for (const text of ['t', 'tw', 'two']) writeFileSync(join(dir, 'a.yaml'), text);
      await settle();
      expect(changes).toBe(1);
      writeFileSync(join(dir, 'a.yaml'), 'two');
      utimesSync(join(dir, 'a.yaml'), new Date(), new Date());
      await settle();
      expect(changes).toBe(1);
      writeFileSync(join(dir, 'b.yaml'), 'new');
      await settle();
      expect(changes).toBe(2);
    } finally {
      watcher.close();
    }
  });

  it('watches a single config file through its directory, ignoring the other files there', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'ta-watch-'));
    const file = join(dir, 'agent.yaml');
    writeFileSync(file, 'one');
    let changes = 0;
    const watcher = watchConfig(file, () => changes++, quiet);
    try {
      writeFileSync(join(dir, 'other.yaml'), 'x');
      await settle();
      expect(changes).toBe(0);
      writeFileSync(`${file}.tmp`, 'two');
      // An editor's save: a new file renamed over the old one.
      renameSync(`${file}.tmp`, file);
      await settle();
      expect(changes).toBe(1);
    } finally {
      watcher.close();
    }
  });

  it('digests names and contents', () => {
    const dir = mkdtempSync(join(tmpdir(), 'ta-digest-'));
    writeFileSync(join(dir, 'a.yaml'), 'one');
    const first = configDigest(dir);
    expect(configDigest(dir)).toBe(first);
    writeFileSync(join(dir, 'a.yaml'), 'two');
    expect(configDigest(dir)).not.toBe(first);
  });
});
