/** One sample line of the Prometheus text format: `name{label="value",…} value`. */
export interface PromSample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

export interface PromFamily {
  type: string;
  help?: string;
  samples: PromSample[];
}

const SAMPLE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)(?:\s+\d+)?$/;
const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g;

/**
 * A small, strict parser of the Prometheus text exposition format (0.0.4), as a scraper reads it:
 * families by their `# TYPE` line, each sample assigned to the family it follows; a line that is
 * neither a comment nor a well-formed sample fails the parse.
 */
export function parsePrometheusText(text: string): Map<string, PromFamily> {
  const families = new Map<string, PromFamily>();
  let current: PromFamily | undefined;
  for (const line of text.split('\n')) {
    if (!line.trim()) continue;
    const meta = /^# (HELP|TYPE|UNIT) (\S+) ?(.*)$/.exec(line);
    if (meta) {
      const [, kind, name, rest] = meta;
      const family = families.get(name!) ?? { type: 'untyped', samples: [] };
      families.set(name!, family);
      if (kind === 'TYPE') family.type = rest!;
      if (kind === 'HELP') family.help = rest;
      current = family;
      continue;
    }
    if (line.startsWith('#')) continue;
    const m = SAMPLE.exec(line);
    if (!m) throw new Error(`not a Prometheus sample line: ${line}`);
    const labels: Record<string, string> = {};
    for (const [, k, v] of (m[2] ?? '').matchAll(LABEL)) labels[k!] = v!.replace(/\\n/g, '\n').replace(/\\"/g, '"').replace(/\\\\/g, '\\');
    const value = m[3] === '+Inf' ? Infinity : m[3] === '-Inf' ? -Infinity : Number(m[3]);
    if (Number.isNaN(value) && m[3] !== 'NaN') throw new Error(`not a sample value: ${line}`);
    const sample = { name: m[1]!, labels, value };
    const family = current && m[1]!.startsWith(familyPrefix(families, current)) ? current : undefined;
    if (!family) throw new Error(`sample outside its family: ${line}`);
    family.samples.push(sample);
  }
  return families;
}

function familyPrefix(families: Map<string, PromFamily>, family: PromFamily): string {
  for (const [name, f] of families) if (f === family) return name;
  return '';
}

/** The samples of `family` named `name` (a histogram's `_count`, say) whose labels include `labels`. */
export function samples(families: Map<string, PromFamily>, family: string, name: string, labels: Record<string, string> = {}): PromSample[] {
  const f = families.get(family);
  if (!f) return [];
  return f.samples.filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v));
}

/** The sum of those samples' values (0 when there are none). */
export function total(families: Map<string, PromFamily>, family: string, name: string, labels: Record<string, string> = {}): number {
  return samples(families, family, name, labels).reduce((n, s) => n + s.value, 0);
}
