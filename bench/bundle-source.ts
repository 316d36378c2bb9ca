import { readFileSync } from 'node:fs';
import { SourceMap } from 'node:module';
import { dirname, join } from 'node:path';

export interface Frame {
  url: string;
  /** 0-based, as V8's profiles give it. */
  lineNumber: number;
  columnNumber?: number;
}

/** The source maps of the one-file servers met so far, by path (undefined: none readable). */
const maps = new Map<string, SourceMap | undefined>();

/**
 * A frame of the one-file server (dist/cli.js, made by scripts/bundle-vendor.mjs) as the frame of
 * the dist file it came from, through the bundle's source map (dist/cli.js.map), so the profiles
 * and allocation reports still say which part of the server ran; any other frame as it is.
 */
export function unbundled(frame: Frame): Frame {
  if (!frame.url.endsWith('/dist/cli.js')) return frame;
  const path = frame.url.replace(/^file:\/\//, '');
  if (!maps.has(path)) {
    let map: SourceMap | undefined;
    try {
      map = new SourceMap(JSON.parse(readFileSync(`${path}.map`, 'utf8')) as ConstructorParameters<typeof SourceMap>[0]);
    } catch {
      map = undefined; // a plain tsc build: cli.js is the CLI alone
    }
    maps.set(path, map);
  }
  const entry = maps.get(path)?.findEntry(frame.lineNumber, frame.columnNumber ?? 0);
  if (!entry || !('originalSource' in entry)) return frame;
  return { url: join(dirname(path), entry.originalSource), lineNumber: entry.originalLine, columnNumber: entry.originalColumn };
}
