// The demo's point, as a metric: the refusals mcp-edge counts. `npm start` prints the query; the example
// client (examples/call-demo.ts) reads the counter before and after its calls.

/** The family that counts every limit crossed, by direction and action. */
export const LIMIT_EXCEEDED = 'mcp_edge_limit_exceeded_total';

/** The series that counts the demo's refusal: the 1.5 MiB result over the 1 MiB response ceiling. */
export const REFUSAL_QUERY = `${LIMIT_EXCEEDED}{direction="response",action="rejected"}`;

/**
 * The sum of the LIMIT_EXCEEDED samples of a Prometheus text exposition whose labels include every one
 * of `labels` (0 when there is none: the family has no series before the first refusal).
 */
export function limitExceededCount(exposition: string, labels: Record<string, string>): number {
  let total = 0;
  for (const line of exposition.split('\n')) {
    if (!line.startsWith(`${LIMIT_EXCEEDED}{`)) continue;
    const close = line.lastIndexOf('}');
    const labelText = line.slice(LIMIT_EXCEEDED.length + 1, close);
    if (Object.entries(labels).every(([name, value]) => labelText.includes(`${name}="${value}"`))) {
      total += Number(
        line
          .slice(close + 1)
          .trim()
          .split(' ')[0],
      );
    }
  }
  return total;
}
