// Reads samples from a Prometheus text exposition, as the metrics tests check them.

export interface ExposedSample {
  labels: Record<string, string>;
  value: number;
}

/** Every labelled sample of `name`, in the order exposed. */
export function samples(text: string, name: string): ExposedSample[] {
  const out: ExposedSample[] = [];
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name}{`)) continue;
    const body = line.slice(name.length + 1, line.lastIndexOf('}'));
    const labels = Object.fromEntries([...body.matchAll(/(\w+)="([^"]*)"/g)].map((m) => [m[1]!, m[2]!]));
    out.push({ labels, value: Number(line.slice(line.lastIndexOf(' ') + 1)) });
  }
  return out;
}

/** The value of the first sample of `name` whose labels include `labels`. */
export function sample(text: string, name: string, labels: Record<string, string>): number | undefined {
  return samples(text, name).find((s) => Object.entries(labels).every(([k, v]) => s.labels[k] === v))?.value;
}
