// Shared vocabulary of the pure core. Nothing here touches sockets, files or clocks.
import type { Ceiling, CeilingBlock, CeilingChoice, ChoiceValue, LimitName } from './ceilings.js';

/** A JSON-RPC id as it appears on the wire. `null` is what an error carries when the id is unknown. */
export type JsonRpcId = string | number | null;

export type Direction = 'request' | 'response';

/** What a single JSON-RPC message is, judged from its top-level members. */
export type MessageKind = 'request' | 'notification' | 'result' | 'error' | 'invalid';

export type { CeilingBlock, LimitName } from './ceilings.js';

export type LimitMode = 'enforce' | 'observe';

/** A layer of limits: the top-level `limits` or a tenant's `limits`. */
export interface LimitsLayer extends CeilingBlock {
  mode?: LimitMode;
  /** Optional global cap: no effective ceiling may exceed it (only meaningful at the top level). */
  hardMaxBytes?: number;
  methods?: Record<string, CeilingBlock>;
  tools?: Record<string, CeilingBlock>;
}

/** Everything the limit resolver needs: the defaults and each tenant's own layer. */
export interface LimitPolicy {
  defaults: LimitsLayer;
  tenants: Record<string, { limits?: LimitsLayer }>;
}

/** One resolved ceiling and where it came from, in its unit (bytes or messages). `value: null` means no ceiling. */
export interface ResolvedCeiling {
  value: number | null;
  /** The config path the value came from, e.g. `tenants.acme.limits.tools.export.response.maxMessageBytes`, or `built-in default`. */
  source: string;
}

/** The ceilings and mode that apply to one (tenant, method, tool); the same object for every name no block lists. */
export interface EffectiveLimits {
  mode: { value: LimitMode; source: string };
  /** Every ceiling and choice of the tables (src/core/ceilings.ts), by its config path. */
  request: CeilingsOf<'request'> & ChoicesOf<'request'>;
  response: CeilingsOf<'response'> & ChoicesOf<'response'>;
}

/** Every ceiling of one direction, resolved, by its key. */
type CeilingsOf<D extends Ceiling['direction']> = {
  [K in Extract<Ceiling, { direction: D }>['key']]: ResolvedCeiling;
};

/** One resolved choice and where it came from. */
export interface ResolvedChoice<V extends string> {
  value: V;
  source: string;
}

/** Every choice of one direction, resolved, by its key. */
type ChoicesOf<D extends Ceiling['direction']> = {
  [K in Extract<CeilingChoice, { direction: D }>['key']]: ResolvedChoice<ChoiceValue<K>>;
};

/** What the request it answers was: known for responses by id, and for requests from themselves. */
export interface MessageSubject {
  method: string | undefined;
  tool: string | undefined;
  /** For a request from the client (and so for its answer): the host label of the client that sent it. */
  host?: string | undefined;
}

/** A ceiling that a message or body went over. Carries everything the error contract and the metrics need. */
export interface LimitViolation {
  limit: LimitName;
  direction: Direction;
  /** The ceiling and what was observed, in the ceiling's unit (bytes or messages). */
  limitValue: number;
  observedValue: number;
  /** True when reading stopped at the ceiling, so the real value is at least `observedValue`. */
  observedIsLowerBound: boolean;
  tenant: string;
  method: string | undefined;
  tool: string | undefined;
  /** The id of the offending message (or of the request a response answers); null when it cannot be recovered. */
  id: JsonRpcId;
}

/** Bytes per result channel of a tool result, as sent. */
export interface ResultChannels {
  content_text: number;
  content_image: number;
  content_audio: number;
  content_resource_link: number;
  content_resource: number;
  structured: number;
}

export type ResultChannelName = keyof ResultChannels;

/** The measurement of one complete JSON-RPC message. Measuring never changes a byte. */
export interface MessageMeasurement {
  /** UTF-8 byte length of the message exactly as the peer sent it. */
  envelopeBytes: number;
  kind: MessageKind;
  id: JsonRpcId | undefined;
  /** For requests and notifications, their own method. */
  method: string | undefined;
  /** For a tools/call request, params.name. */
  tool: string | undefined;
  /** For a tool result: bytes of each channel. */
  channels: ResultChannels | undefined;
  /** Bytes of text blocks whose text equals the serialized structuredContent. */
  duplicatedBytes: number;
  /** Observational only: a rough token estimate of the message. */
  estimatedTokens: number;
}
