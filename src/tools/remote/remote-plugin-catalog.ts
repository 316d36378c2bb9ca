import { existsSync, readFileSync } from 'node:fs';
import { dirname, isAbsolute, resolve } from 'node:path';
import { parse } from 'yaml';

/** One entry of the remote plugin catalog (upstream fields, plus our optional `forward_token`). */
export interface RemotePluginEntry {
  plugin_name: string;
  /** The OpenAPI document (JSON or YAML), resolved to an absolute path. */
  openapi_json_path: string;
  /** Overrides the document's `servers[0].url`. */
  server_url?: string;
  /** Ours: send the caller's bearer token as `Authorization` (upstream never forwards it). */
  forward_token?: boolean;
}

/**
 * Reads `TA_REMOTE_PLUGIN_PATH` (teal-agents.md §5.2):
 * ```yaml
 * remote_plugins:
 *   - plugin_name: api_weather
 *     openapi_json_path: ./openapi_weather.json
 *     server_url: https://api.open-meteo.com
 * ```
 * A relative document path is taken from the catalog's own directory when the file is there, else
 * from the working directory (where upstream's catalogs expect it). Returns the entries and the
 * problems (both reported at boot).
 */
export function loadRemotePluginCatalog(path: string): { entries: Map<string, RemotePluginEntry>; problems: string[] } {
  const entries = new Map<string, RemotePluginEntry>();
  const problems: string[] = [];
  let raw: unknown;
  try {
    raw = parse(readFileSync(path, 'utf8'));
  } catch (err) {
    return { entries, problems: [`${path}: cannot read the remote plugin catalog: ${(err as Error).message}`] };
  }
  const list = (raw as { remote_plugins?: unknown } | null)?.remote_plugins;
  if (!Array.isArray(list)) return { entries, problems: [`${path}: remote_plugins must be a list`] };
  list.forEach((e: Partial<RemotePluginEntry> | null, i) => {
    const where = `${path}: remote_plugins[${i}]`;
    if (typeof e?.plugin_name !== 'string' || !/^[A-Za-z0-9_]+$/.test(e.plugin_name)) {
      problems.push(`${where}.plugin_name: must be letters, digits and "_"`);
      return;
    }
    if (typeof e.openapi_json_path !== 'string' || !e.openapi_json_path) {
      problems.push(`${where}.openapi_json_path: is required`);
      return;
    }
    if (e.server_url !== undefined && (typeof e.server_url !== 'string' || !/^https?:\/\/\S+$/.test(e.server_url))) {
      problems.push(`${where}.server_url: must be an http(s) URL`);
      return;
    }
    if (entries.has(e.plugin_name)) problems.push(`${where}.plugin_name: duplicate name ${e.plugin_name}`);
    entries.set(e.plugin_name, {
      plugin_name: e.plugin_name,
      openapi_json_path: resolveDocument(e.openapi_json_path, dirname(path)),
      server_url: e.server_url,
      forward_token: e.forward_token === true,
    });
  });
  return { entries, problems };
}

function resolveDocument(p: string, catalogDir: string): string {
  if (isAbsolute(p)) return p;
  const besideCatalog = resolve(catalogDir, p);
  return existsSync(besideCatalog) ? besideCatalog : resolve(p);
}
