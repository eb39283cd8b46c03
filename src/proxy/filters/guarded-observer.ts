// A filter's InspectionObserver as the chain hands it to the inspectors: each method's throw is reported (the
// chain logs it under the filter's name) and the message goes on to the other observers. Fixed arities, no
// rest arguments: these run for every message.
import type { InspectionObserver } from '../../inspect/observer.js';

/** `failed(method, err)`: a method of the observer threw. */
export function guardedObserver(
  observer: InspectionObserver,
  failed: (method: string, err: unknown) => void,
): InspectionObserver {
  const guarded: InspectionObserver = {
    message(direction, measurement, subject) {
      try {
        observer.message(direction, measurement, subject);
      } catch (err) {
        failed('message', err);
      }
    },
    limitExceeded(violation, action) {
      try {
        observer.limitExceeded(violation, action);
      } catch (err) {
        failed('limitExceeded', err);
      }
    },
    unparsable(direction, bytes, reason) {
      try {
        observer.unparsable(direction, bytes, reason);
      } catch (err) {
        failed('unparsable', err);
      }
    },
  };
  const { ceilingMeasured, toolsListed, toolsDescribed, toolAnswered, hostBudget } = observer;
  if (ceilingMeasured !== undefined) {
    guarded.ceilingMeasured = (direction, limit, ceiling, bytes, subject) => {
      try {
        ceilingMeasured.call(observer, direction, limit, ceiling, bytes, subject);
      } catch (err) {
        failed('ceilingMeasured', err);
      }
    };
  }
  if (toolsListed !== undefined) {
    guarded.toolsListed = (names) => {
      try {
        toolsListed.call(observer, names);
      } catch (err) {
        failed('toolsListed', err);
      }
    };
  }
  if (toolsDescribed !== undefined) {
    guarded.toolsDescribed = (tools) => {
      try {
        toolsDescribed.call(observer, tools);
      } catch (err) {
        failed('toolsDescribed', err);
      }
    };
  }
  if (toolAnswered !== undefined) {
    guarded.toolAnswered = (tool, error) => {
      try {
        toolAnswered.call(observer, tool, error);
      } catch (err) {
        failed('toolAnswered', err);
      }
    };
  }
  if (hostBudget !== undefined) {
    guarded.hostBudget = (observation) => {
      try {
        hostBudget.call(observer, observation);
      } catch (err) {
        failed('hostBudget', err);
      }
    };
  }
  return guarded;
}
