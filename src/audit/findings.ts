// Contract hygiene: what an MCP server does that the spec or the hosts advise against, each a warning with
// the one-line fix. Plain functions over what the audit saw.
import type { CallReport } from './calls.js';
import type { CatalogWeight } from './catalog.js';
import { type CursorProbe, INVALID_CURSOR, itemIds, type ListingWalk } from './listing.js';

export interface Finding {
  code: string;
  message: string;
  fix: string;
  /** The listing, tool or call it is about. */
  subject?: string;
}

/** An incomplete walk: the pages seen, and why it stopped. */
export function walkFindings(walk: ListingWalk, maxPages: number): Finding[] {
  const method = walk.listing.method;
  const seen = `${walk.pages.length} page(s), ${walk.items.length} item(s) seen`;
  switch (walk.stop) {
    case 'cursor-cycle':
      return [
        {
          code: 'cursor-cycle',
          subject: method,
          message: `${method} returned a nextCursor it had already returned: the listing never ends (${seen})`,
          fix: 'return a nextCursor only when more items follow, and never one already issued in this walk',
        },
      ];
    case 'page-cap':
      return [
        {
          code: 'page-cap',
          subject: method,
          message: `${method} still had a nextCursor after ${maxPages} pages (--max-pages); the walk stopped (${seen})`,
          fix: 'end the listing (omit nextCursor on the last page), or give larger pages',
        },
      ];
    case 'deadline':
      return [
        {
          code: 'deadline',
          subject: method,
          message: `${method} was not walked to its end before the audit's deadline (--timeout) (${seen})`,
          fix: 'answer listings promptly; a host waits for the whole catalog before its first turn',
        },
      ];
    case 'error':
      return [
        {
          code: 'listing-error',
          subject: method,
          message: `${method} failed after ${seen}: ${walk.error ?? 'no answer'}`,
          fix: `answer ${method} with a result, or do not declare the capability that offers it`,
        },
      ];
    default:
      return [];
  }
}

function duplicates(ids: readonly string[]): string[] {
  const seen = new Set<string>();
  const repeated = new Set<string>();
  for (const id of ids) {
    if (seen.has(id)) repeated.add(id);
    seen.add(id);
  }
  return [...repeated];
}

function sample(names: readonly string[]): string {
  const shown = names.slice(0, 5).map((n) => JSON.stringify(n));
  return names.length > 5 ? `${shown.join(', ')} and ${names.length - 5} more` : shown.join(', ');
}

/** Pages that repeat an item within a walk, or a second walk that lists other items than the first. */
export function pagingFindings(first: ListingWalk, second: ListingWalk | undefined): Finding[] {
  const method = first.listing.method;
  const findings: Finding[] = [];
  const ids = itemIds(first);
  const repeated = duplicates(ids);
  if (repeated.length > 0 && first.pages.length > 1) {
    findings.push({
      code: 'pages-repeat-items',
      subject: method,
      message: `${method} lists ${sample(repeated)} on more than one page`,
      fix: 'derive each cursor from a stable position (the last item returned), so pages neither overlap nor skip',
    });
  }
  if (second === undefined || first.stop !== 'end' || second.stop !== 'end') return findings;
  const again = new Set(itemIds(second));
  const before = new Set(ids);
  const skipped = [...before].filter((id) => !again.has(id));
  const added = [...again].filter((id) => !before.has(id));
  if (skipped.length > 0 || added.length > 0) {
    findings.push({
      code: 'pages-unstable',
      subject: method,
      message: `a second walk of ${method} ${skipped.length > 0 ? `skipped ${sample(skipped)}` : ''}${skipped.length > 0 && added.length > 0 ? ' and ' : ''}${added.length > 0 ? `added ${sample(added)}` : ''}`,
      fix: 'page over a stable order, and send notifications/*/list_changed when the list really changes',
    });
  }
  return findings;
}

export function cursorFindings(method: string, probe: CursorProbe): Finding[] {
  if (probe.answered === 'result') {
    return [
      {
        code: 'invalid-cursor-accepted',
        subject: method,
        message: `${method} with the cursor "${INVALID_CURSOR}", which it never issued, was answered with a result (${probe.items} item(s)) instead of error -32602`,
        fix: 'validate the cursor and answer one you did not issue with JSON-RPC error -32602 (Invalid params)',
      },
    ];
  }
  if (probe.answered === 'other-error') {
    return [
      {
        code: 'invalid-cursor-code',
        subject: method,
        message: `${method} answered an invalid cursor with error ${probe.code ?? '(no code)'} ("${probe.message}"), not -32602`,
        fix: 'answer a cursor you did not issue with JSON-RPC error -32602 (Invalid params)',
      },
    ];
  }
  return [];
}

/** Words in a description that promise a paging or limiting parameter. */
const PROMISED_PARAMETER = /\b(cursor|limit|offset|page_?size|max_?results)\b/i;

function hasParameterLike(schema: unknown, word: string): boolean {
  const properties =
    typeof schema === 'object' && schema !== null
      ? (schema as { properties?: unknown }).properties
      : undefined;
  if (typeof properties !== 'object' || properties === null) return false;
  const wanted = word.toLowerCase().replace(/_/g, '');
  return Object.keys(properties).some((key) => key.toLowerCase().replace(/_/g, '').includes(wanted));
}

/** `descriptorShare`: the share of the strictest catalog budget a descriptor may take (--descriptor-share). */
export function toolFindings(catalog: CatalogWeight, descriptorShare: number): Finding[] {
  const findings: Finding[] = [];
  for (const tool of catalog.tools) {
    const description = typeof tool.descriptor.description === 'string' ? tool.descriptor.description : '';
    const promised = PROMISED_PARAMETER.exec(description)?.[1];
    if (promised !== undefined && !hasParameterLike(tool.descriptor.inputSchema, promised)) {
      findings.push({
        code: 'promised-parameter-missing',
        subject: tool.name,
        message: `tool ${tool.name}'s description mentions "${promised}" but its inputSchema has no such parameter`,
        fix: `add "${promised}" to the inputSchema's properties, or take the promise out of the description`,
      });
    }
    const heavy = tool.strictest;
    if (heavy !== undefined && heavy.share > descriptorShare) {
      findings.push({
        code: 'descriptor-heavy',
        subject: tool.name,
        message: `tool ${tool.name}'s descriptor is ${heavy.size} ${heavy.unit}, ${(heavy.share * 100).toFixed(1)}% of ${heavy.host}'s catalog budget of ${heavy.budget}, in every conversation (over --descriptor-share ${descriptorShare})`,
        fix: 'shorten the description and schema descriptions; move examples and long guidance to a resource or prompt',
      });
    }
  }
  return findings;
}

/** A tool with outputSchema whose structuredContent is also sent whole as text: the host pays for it twice. */
export function callFindings(calls: readonly CallReport[], catalog: CatalogWeight): Finding[] {
  const withOutputSchema = new Set(
    catalog.tools.filter((t) => t.descriptor.outputSchema !== undefined).map((t) => t.name),
  );
  const findings: Finding[] = [];
  for (const call of calls) {
    if (call.tool === undefined || call.duplicatedBytes === 0) continue;
    const declared = withOutputSchema.has(call.tool);
    findings.push({
      code: 'structured-content-duplicated',
      subject: call.tool,
      message: `tool ${call.tool}${declared ? ' (it has an outputSchema)' : ''} sends structuredContent (${call.channels?.structuredContent ?? 0} bytes) and the same JSON again as text: ${call.duplicatedBytes} bytes twice`,
      fix: 'send a short text summary in content, not the serialized structuredContent (hosts that read structuredContent show it already)',
    });
  }
  return findings;
}
