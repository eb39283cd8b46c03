// The ceilings as an exchange filter: the checks every complete message goes through, in both directions. A
// check names the ceiling a message crossed; the edge (src/inspect/message-verdict.ts) turns it into what
// happens to the message. The ceilings of a whole body (request.maxBodyBytes, maxBatchMessages, maxJsonDepth)
// are judged by the body reader before any message is (src/inspect/request-body.ts).
import { type MessageCheck, messageSizeCheck } from '../../inspect/message-verdict.js';
import type { ExchangeFilter } from './exchange-filter.js';

/** Every check a message goes through, in order; a new check on messages is added here. */
export const CEILING_CHECKS: readonly MessageCheck[] = [messageSizeCheck];

export function ceilingsFilter(): ExchangeFilter {
  return { name: 'ceilings', checks: CEILING_CHECKS };
}
