/**
 * A reader of the Prometheus text exposition format (0.0.4) for tests: the
 * families with their HELP and TYPE, and each sample with its labels. It
 * checks what promtool cannot: that no family mixes a total series with
 * per-object series (so sum() never counts a thing twice).
 */
export interface Sample {
  readonly name: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly value: number;
}

export interface Family {
  readonly name: string;
  help: string | undefined;
  type: string | undefined;
  readonly samples: Sample[];
}

const sampleLine = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/;
const labelPair = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g;

export function parseExposition(text: string): Map<string, Family> {
  const families = new Map<string, Family>();
  const family = (name: string): Family => {
    let found = families.get(name);
    if (!found) families.set(name, (found = { name, help: undefined, type: undefined, samples: [] }));
    return found;
  };
  for (const line of text.split('\n')) {
    if (line === '') continue;
    const comment = /^# (HELP|TYPE) (\S+) (.*)$/.exec(line);
    if (comment) {
      const [, kind, name = '', rest = ''] = comment;
      if (kind === 'HELP') family(name).help = rest;
      else family(name).type = rest;
      continue;
    }
    const match = sampleLine.exec(line);
    if (!match) throw new Error(`not a sample line: ${line}`);
    const [, name = '', labelText = '', value = ''] = match;
    const labels: Record<string, string> = {};
    for (const pair of labelText.matchAll(labelPair)) labels[pair[1]!] = pair[2]!;
    family(familyOf(name, families)).samples.push({ name, labels, value: Number(value) });
  }
  return families;
}

/** A histogram's _bucket/_sum/_count samples belong to the family without the suffix. */
function familyOf(sampleName: string, families: Map<string, Family>): string {
  if (families.get(sampleName)?.type !== undefined) return sampleName;
  for (const suffix of ['_bucket', '_sum', '_count']) {
    const base = sampleName.slice(0, -suffix.length);
    if (sampleName.endsWith(suffix) && families.get(base)?.type !== undefined) return base;
  }
  return sampleName;
}

/**
 * Families where sum() would count something twice: a series with no labels
 * (or an empty label value, the old "total" marker) beside labelled series
 * of the same family. Histogram buckets (le) are not object labels.
 */
export function doubleCountingFamilies(families: Map<string, Family>): string[] {
  const offenders: string[] = [];
  for (const family of families.values()) {
    const series = family.samples.filter((sample) => !sample.name.endsWith('_bucket')).map((sample) => sample.labels);
    const labelled = series.filter((labels) => Object.keys(labels).length > 0);
    const totals = series.filter((labels) => Object.keys(labels).length === 0 || Object.values(labels).some((value) => value === ''));
    if (labelled.length > 0 && totals.length > 0) offenders.push(family.name);
  }
  return offenders;
}
