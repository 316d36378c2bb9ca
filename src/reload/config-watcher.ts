import { createHash } from 'node:crypto';
import { FSWatcher, readdirSync, readFileSync, statSync, watch } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import type { Logger } from 'pino';

/** Editors write a file in several steps (truncate, write, rename): one change, one reload. */
export const WATCH_DEBOUNCE_MS = 300;

/**
 * The files a reload reads: the config file, or every file of the config directory (the agent
 * YAMLs and what sits beside them, e.g. custom_types), non-recursive like the loader. A digest of
 * their names and contents tells a real edit from an event that changed nothing (a touch, a save
 * of the same text), which then reloads nothing.
 */
export function configDigest(path: string): string {
  const hash = createHash('sha256');
  const abs = resolve(path);
  const st = statSync(abs, { throwIfNoEntry: false });
  const files = st?.isDirectory()
    ? readdirSync(abs)
        .sort()
        .map((f) => join(abs, f))
    : [abs];
  for (const file of files) {
    hash.update(`${file}\0`);
    try {
      if (statSync(file).isFile()) hash.update(readFileSync(file));
    } catch {
      hash.update('\0missing');
    }
  }
  return hash.digest('hex');
}

/**
 * Calls `onChange` once the config path has been quiet for WATCH_DEBOUNCE_MS after an edit that
 * changed a file. A single config file is watched through its directory, because editors replace
 * the file (a new inode) rather than write into it.
 */
export function watchConfig(path: string, onChange: () => void, logger: Logger): { close: () => void } {
  const abs = resolve(path);
  const isDir = statSync(abs, { throwIfNoEntry: false })?.isDirectory() ?? false;
  const dir = isDir ? abs : dirname(abs);
  let last = configDigest(abs);
  let timer: NodeJS.Timeout | undefined;
  const settle = () => {
    timer = undefined;
    const now = configDigest(abs);
    if (now === last) return;
    last = now;
    onChange();
  };
  let watcher: FSWatcher;
  try {
    watcher = watch(dir, { persistent: false }, (_event, name) => {
      if (!isDir && name && String(name) !== basename(abs)) return;
      clearTimeout(timer);
      timer = setTimeout(settle, WATCH_DEBOUNCE_MS);
    });
  } catch (err) {
    logger.error({ err, path: dir }, 'TA_CONFIG_WATCH: cannot watch the agent config; send SIGHUP to reload it');
    return { close: () => undefined };
  }
  watcher.on('error', (err) => logger.error({ err, path: dir }, 'TA_CONFIG_WATCH: watching the agent config failed; send SIGHUP to reload it'));
  return {
    close: () => {
      clearTimeout(timer);
      watcher.close();
    },
  };
}
