// An InspectionObserver that writes down everything it is told, in order, for tests that compare two ways
// of judging the same bytes.
import type { InspectionObserver } from '../../src/inspect/observer.js';

export function recordingObserver(log: unknown[]): InspectionObserver {
  return {
    message: (direction, measurement, subject) => log.push({ direction, measurement, subject }),
    limitExceeded: (violation, action) => log.push({ violation, action }),
    ambiguous: (direction, key) => log.push({ direction, ambiguous: key }),
    unparsable: (direction, bytes, reason) => log.push({ direction, bytes, reason }),
    toolsListed: (names) => log.push({ names }),
    toolsDescribed: (tools) => log.push({ tools }),
    toolAnswered: (tool, error) => log.push({ tool, error }),
  };
}
