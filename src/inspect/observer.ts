// What the inspectors report while they work. The metrics registry and the exchange log implement it;
// the inspectors never know which.
import type { AmbiguousKey } from '../core/key-names.js';
import type {
  Direction,
  LimitName,
  LimitViolation,
  MessageMeasurement,
  MessageSubject,
} from '../core/types.js';
import type { HostBudgetObservation } from '../hosts/host-judge.js';
import type { ToolAnswerError, ToolDescriptorWeight } from './tool-answers.js';

export type LimitAction = 'rejected' | 'observed';

export interface InspectionObserver {
  /** Every complete JSON-RPC message seen, in either direction. `subject` is what it is about (its own method, or the request it answers). */
  message(direction: Direction, measurement: MessageMeasurement, subject: MessageSubject): void;
  /** A ceiling tripped: `rejected` when enforced, `observed` in observe mode. */
  limitExceeded(violation: LimitViolation, action: LimitAction): void;
  /**
   * A message's size against the ceiling that applied to it (its tool's, method's or tenant's), whether or not
   * it crossed it: where the ceiling is known, so how near a message came to its own ceiling is exact.
   */
  ceilingMeasured?(
    direction: Direction,
    limit: LimitName,
    ceiling: number,
    bytes: number,
    subject: MessageSubject,
  ): void;
  /** A message with a key another reader may read otherwise than the edge: it is not delivered as sent. */
  ambiguous?(direction: Direction, key: AmbiguousKey): void;
  /** A message that is not JSON-RPC (not JSON, or not a JSON-RPC shape); it is forwarded as it is. */
  unparsable(direction: Direction, bytes: number, reason: string): void;
  /** The tool names of a `tools/list` result from the upstream (the server's own tools). */
  toolsListed?(names: readonly string[]): void;
  /** Each tool of a `tools/list` page from the upstream and the bytes of its descriptor. */
  toolsDescribed?(tools: readonly ToolDescriptorWeight[]): void;
  /** An answer from the upstream to tools/call: `error` says whether it is one (never the edge's own refusals). */
  toolAnswered?(tool: string | undefined, error: ToolAnswerError | undefined): void;
  /** A tools/call result measured against the budget of the host that called. */
  hostBudget?(observation: HostBudgetObservation): void;
}

/** Fans one observation out to several observers (log summary, metrics). */
export function combineObservers(...observers: InspectionObserver[]): InspectionObserver {
  return {
    message: (d, m, s) => {
      for (const o of observers) o.message(d, m, s);
    },
    limitExceeded: (v, a) => {
      for (const o of observers) o.limitExceeded(v, a);
    },
    ceilingMeasured: (d, l, c, b, s) => {
      for (const o of observers) o.ceilingMeasured?.(d, l, c, b, s);
    },
    ambiguous: (d, k) => {
      for (const o of observers) o.ambiguous?.(d, k);
    },
    unparsable: (d, b, r) => {
      for (const o of observers) o.unparsable(d, b, r);
    },
    toolsListed: (names) => {
      for (const o of observers) o.toolsListed?.(names);
    },
    toolsDescribed: (tools) => {
      for (const o of observers) o.toolsDescribed?.(tools);
    },
    toolAnswered: (tool, error) => {
      for (const o of observers) o.toolAnswered?.(tool, error);
    },
    hostBudget: (observation) => {
      for (const o of observers) o.hostBudget?.(observation);
    },
  };
}

/** The per-exchange summary that ends up in the exchange's log line. */
export class ExchangeSummary implements InspectionObserver {
  requestMessages = 0;
  responseMessages = 0;
  largestResponseMessage = 0;
  methods = new Set<string>();
  tools = new Set<string>();
  violations: { limit: string; action: LimitAction; observed: number; id: unknown }[] = [];
  unparsableMessages = 0;
  /**
   * Messages towards the client that a ceiling, a host budget or an ambiguous key replaced or dropped
   * (enforced, not observed).
   */
  rejectedResponses = 0;
  /** Tool results over the budget of the host that called. */
  hostBudgets: ({ host: string; tool: string | undefined } & NonNullable<HostBudgetObservation['over']>)[] =
    [];

  message(direction: Direction, m: MessageMeasurement, subject: MessageSubject): void {
    if (direction === 'request') {
      this.requestMessages++;
      if (subject.method !== undefined && this.methods.size < 16) this.methods.add(subject.method);
      if (subject.tool !== undefined && this.tools.size < 16) this.tools.add(subject.tool);
    } else {
      this.responseMessages++;
      if (m.envelopeBytes > this.largestResponseMessage) this.largestResponseMessage = m.envelopeBytes;
    }
  }

  limitExceeded(v: LimitViolation, action: LimitAction): void {
    if (v.direction === 'response' && action === 'rejected') this.rejectedResponses++;
    if (this.violations.length < 16) {
      this.violations.push({ limit: v.limit, action, observed: v.observedValue, id: v.id });
    }
  }

  ambiguous(direction: Direction): void {
    if (direction === 'response') this.rejectedResponses++;
  }

  unparsable(): void {
    this.unparsableMessages++;
  }

  hostBudget(o: HostBudgetObservation): void {
    if (o.over?.action === 'refused') this.rejectedResponses++;
    if (o.over !== undefined && this.hostBudgets.length < 16) {
      this.hostBudgets.push({ host: o.host, tool: o.tool, ...o.over });
    }
  }
}
