import { readdirSync, statSync } from 'node:fs';
import { extname, join, resolve } from 'node:path';

const YAML_EXTENSIONS = new Set(['.yaml', '.yml']);

export interface ConfigFileList {
  files: string[];
  /** Problems with the path itself, already prefixed with it. */
  problems: string[];
}

/**
 * `TA_SERVICE_CONFIG` (or `serve <path>`): one agent file, or every `*.yaml`/`*.yml` file of a
 * directory, sorted, NOT recursive (a subdirectory can hold drafts or fixtures without serving them).
 */
export function listConfigFiles(path: string): ConfigFileList {
  const abs = resolve(path);
  let st;
  try {
    st = statSync(abs);
  } catch {
    return { files: [], problems: [`${abs}: does not exist (the agent config must be a YAML file or a directory of them)`] };
  }
  if (st.isFile()) return { files: [abs], problems: [] };
  if (!st.isDirectory()) return { files: [], problems: [`${abs}: is neither a file nor a directory`] };
  let names: string[];
  try {
    names = readdirSync(abs);
  } catch (e) {
    return { files: [], problems: [`${abs}: cannot read the directory (${(e as NodeJS.ErrnoException).code ?? String(e)})`] };
  }
  const files = names
    .filter((f) => YAML_EXTENSIONS.has(extname(f).toLowerCase()))
    .sort()
    .map((f) => join(abs, f))
    .filter((f) => statSync(f, { throwIfNoEntry: false })?.isFile());
  if (!files.length) {
    return { files, problems: [`${abs}: no *.yaml or *.yml agent config in this directory (subdirectories are not read)`] };
  }
  return { files, problems: [] };
}
