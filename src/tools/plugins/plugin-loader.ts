import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { PACKAGE_ROOT } from '../../package-root';
import type { PluginDefinition } from './plugin.types';

/** The plugins shipped with the project. */
export const DEMO_PLUGINS_DIR = join(PACKAGE_ROOT, 'demos', 'plugins');

/** Upstream's auto-discovered module next to the config is `custom_plugins.py`; ours, in JS or TS. */
const NEXT_TO_CONFIG = ['custom_plugins.ts', 'custom_plugins.js', 'custom_plugins.cjs', 'custom_plugins.mjs'];
const MODULE_FILE = /\.(ts|js|cjs|mjs)$/;
const NOT_A_MODULE = /\.(d|spec|test)\.ts$|\.map$/;
/** Upstream's plugin module: scanned here for its classes, run by the Python plugin host. */
const PYTHON_NEXT_TO_CONFIG = 'custom_plugins.py';
const PYTHON_FILE = /\.py$/i;

interface LoadedModule {
  file: string;
  plugins: PluginDefinition[];
  error?: string;
}

export interface PluginLookup {
  plugin?: PluginDefinition;
  /** The module that defines it. */
  file?: string;
  /** Set instead of `plugin` when the name is a class of an upstream Python plugin module. */
  python?: { file: string; className: string };
  /** Where it was looked for, in order, and modules that failed to load: for the boot error. */
  searched: string[];
  failures: string[];
}

/**
 * Finds plugins by name, in this order: next to the agent's config file (`custom_plugins.*`, then
 * the modules of a `plugins/` directory there), then `TA_PLUGIN_MODULE` (a module or a directory of
 * modules), then upstream's Python module (`custom_plugins.py` there, or a `TA_PLUGIN_MODULE` that
 * names a `.py`), then the project's `demos/plugins`. The first definition of a name wins, so an
 * operator can replace a shipped plugin. Each module is loaded once per process.
 *
 * A Python module is not loaded here: it is scanned for top-level `class Name`, and a class found
 * there is served by the Python plugin host (src/tools/python), so a shipped plugin of the same
 * name never stands in for the operator's own. A TypeScript port beside it wins over it.
 */
export class PluginLoader {
  private readonly modules = new Map<string, LoadedModule>();
  private readonly python = new Map<string, Set<string>>();

  constructor(
    private readonly pluginModule?: string,
    private readonly demosDir: string = DEMO_PLUGINS_DIR,
  ) {}

  find(name: string, configFile: string): PluginLookup {
    const lookup: PluginLookup = { searched: [], failures: [] };
    for (const place of this.places(configFile)) {
      lookup.searched.push(place);
      if (PYTHON_FILE.test(place)) {
        if (this.pythonClasses(place).has(name)) return { ...lookup, python: { file: place, className: name } };
        continue;
      }
      for (const file of moduleFiles(place)) {
        const mod = this.load(file);
        if (mod.error) {
          lookup.failures.push(`${file}: ${mod.error}`);
          continue;
        }
        const plugin = mod.plugins.find((p) => p?.name === name);
        if (plugin) return { ...lookup, plugin, file };
      }
    }
    return lookup;
  }

  private places(configFile: string): string[] {
    const dir = dirname(configFile);
    const out = [...NEXT_TO_CONFIG.map((f) => join(dir, f)), join(dir, 'plugins')];
    if (this.pluginModule) out.push(resolve(this.pluginModule));
    out.push(join(dir, PYTHON_NEXT_TO_CONFIG));
    out.push(this.demosDir);
    return out;
  }

  private pythonClasses(file: string): Set<string> {
    let classes = this.python.get(file);
    if (!classes) {
      const text = existsSync(file) && statSync(file).isFile() ? readFileSync(file, 'utf8') : '';
      // Module-level names only (upstream looks plugins up as attributes of the module): classes
      // defined there, and names imported there (`from account_plugins import AccountPlugin`).
      classes = new Set([...text.matchAll(/^class\s+([A-Za-z_]\w*)\s*[(:]/gm)].map((m) => m[1]!));
      for (const m of text.matchAll(/^from\s+[\w.]+\s+import\s+(\([^)]*\)|[^\n#]+)/gm)) {
        for (const part of m[1]!.replace(/[()\\]/g, ' ').split(',')) {
          const name = part
            .trim()
            .split(/\s+as\s+/)
            .pop()!
            .trim();
          if (/^[A-Za-z_]\w*$/.test(name)) classes.add(name);
        }
      }
      this.python.set(file, classes);
    }
    return classes;
  }

  private load(file: string): LoadedModule {
    let mod = this.modules.get(file);
    if (mod) return mod;
    try {
      // Node 24 loads TypeScript (type stripping) and ES modules through require() as well.
      mod = { file, plugins: pluginsOf(require(file)) };
    } catch (err) {
      mod = { file, plugins: [], error: (err as Error)?.message ?? String(err) };
    }
    this.modules.set(file, mod);
    return mod;
  }
}

/** A path that is a module file gives itself; a directory gives its module files, sorted. */
function moduleFiles(place: string): string[] {
  if (!existsSync(place)) return [];
  if (!statSync(place).isDirectory()) return [place];
  return readdirSync(place)
    .filter((f) => MODULE_FILE.test(f) && !NOT_A_MODULE.test(f))
    .sort()
    .map((f) => join(place, f));
}

/** `exports.plugins`, or the default export (an array, or an object with `plugins`). */
function pluginsOf(exported: unknown): PluginDefinition[] {
  const e = exported as { plugins?: unknown; default?: unknown } | undefined;
  const candidates = [e?.plugins, e?.default, (e?.default as { plugins?: unknown } | undefined)?.plugins];
  const list = candidates.find((c) => Array.isArray(c));
  if (!list) throw new Error('the module exports no `plugins` array (see docs/tools.md)');
  return list as PluginDefinition[];
}
