// A filter's InspectionObserver as the chain hands it to the inspectors: each method's throw is reported (the
// chain logs it under the filter's name) and the message goes on to the other observers. One small object per
// observer and exchange, its methods on the class: no closures made per exchange, no table to look it up in.
import type {
  Direction,
  LimitName,
  LimitViolation,
  MessageMeasurement,
  MessageSubject,
} from '../../core/types.js';
import type { HostBudgetObservation } from '../../hosts/host-judge.js';
import type { InspectionObserver, LimitAction } from '../../inspect/observer.js';
import type { ToolAnswerError, ToolDescriptorWeight } from '../../inspect/tool-answers.js';

/** `failed(method, err)`: a method of the observer threw. */
export type ObserverFailed = (method: string, err: unknown) => void;

export class GuardedObserver implements InspectionObserver {
  readonly #observer: InspectionObserver;
  readonly #failed: ObserverFailed;

  constructor(observer: InspectionObserver, failed: ObserverFailed) {
    this.#observer = observer;
    this.#failed = failed;
  }

  message(direction: Direction, measurement: MessageMeasurement, subject: MessageSubject): void {
    try {
      this.#observer.message(direction, measurement, subject);
    } catch (err) {
      this.#failed('message', err);
    }
  }

  limitExceeded(violation: LimitViolation, action: LimitAction): void {
    try {
      this.#observer.limitExceeded(violation, action);
    } catch (err) {
      this.#failed('limitExceeded', err);
    }
  }

  unparsable(direction: Direction, bytes: number, reason: string): void {
    try {
      this.#observer.unparsable(direction, bytes, reason);
    } catch (err) {
      this.#failed('unparsable', err);
    }
  }

  ceilingMeasured(
    direction: Direction,
    limit: LimitName,
    ceiling: number,
    bytes: number,
    subject: MessageSubject,
  ): void {
    try {
      this.#observer.ceilingMeasured?.(direction, limit, ceiling, bytes, subject);
    } catch (err) {
      this.#failed('ceilingMeasured', err);
    }
  }

  toolsListed(names: readonly string[]): void {
    try {
      this.#observer.toolsListed?.(names);
    } catch (err) {
      this.#failed('toolsListed', err);
    }
  }

  toolsDescribed(tools: readonly ToolDescriptorWeight[]): void {
    try {
      this.#observer.toolsDescribed?.(tools);
    } catch (err) {
      this.#failed('toolsDescribed', err);
    }
  }

  toolAnswered(tool: string | undefined, error: ToolAnswerError | undefined): void {
    try {
      this.#observer.toolAnswered?.(tool, error);
    } catch (err) {
      this.#failed('toolAnswered', err);
    }
  }

  hostBudget(observation: HostBudgetObservation): void {
    try {
      this.#observer.hostBudget?.(observation);
    } catch (err) {
      this.#failed('hostBudget', err);
    }
  }
}
