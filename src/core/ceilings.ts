// The ceilings an operator sets: one table (and, beside it, the choices made in the same blocks). The limit
// resolver, the config schema, `explain`, the config printer, the metrics and the error contract all iterate
// it, so a ceiling is added here once.

export type CeilingUnit = 'bytes' | 'messages' | 'levels';

/** How a unit is named: in sentences (`1,000 levels`) and in an error's data (`limitLevels`, `observedLevels`). */
const UNIT_NAMES: Readonly<Record<CeilingUnit, { word: string; data: string }>> = {
  bytes: { word: 'bytes', data: 'Bytes' },
  messages: { word: 'messages', data: 'Messages' },
  levels: { word: 'levels', data: 'Levels' },
};

/** The word an error's data puts after `limit` and `observed` for a ceiling of this unit. */
export function unitDataName(unit: CeilingUnit): string {
  return UNIT_NAMES[unit].data;
}

/**
 * Why a request over a ceiling is refused: it is too large, or (nesting, which a small body reaches) it is
 * not a request the edge forwards. The refusals table (src/core/refusals/table.ts) fixes the HTTP status of each.
 */
export type CeilingRefusal = 'limit_exceeded' | 'invalid_request';

export interface CeilingSpec {
  /** The config path under `limits` (and under every tenant's, method's and tool's block). */
  readonly name: string;
  readonly direction: 'request' | 'response';
  /** The key inside the `request` or `response` block. */
  readonly key: string;
  readonly unit: CeilingUnit;
  /** The value when no layer of the config sets one (0: no ceiling). */
  readonly builtin: number;
  /** What the error says crossed it, e.g. "Request body". */
  readonly what: string;
  /** What it bounds, for the docs and `explain`. */
  readonly bounds: string;
  /** Whether a method or tool block may set it (false for a ceiling of a whole batch, which has no one method). */
  readonly perMethod: boolean;
  /** The `reason` of its error. */
  readonly reason: CeilingRefusal;
}

const KiB = 1024;
const MiB = 1024 * KiB;

/**
 * The built-in values: 4 MiB for a request body matches the TypeScript and Python SDK servers' own request
 * limit; 1 MiB for one request message matches nginx's default body limit; 10,000 messages in a batch is
 * far past any client's (batches exist in 2025-03-26 only) and bounds the work one small body can ask for;
 * 4 MiB for one response message leaves room for large tool results while bounding what the edge holds;
 * 1,000 levels of nesting is far past any MCP message and stops bodies that recursive parsers and validators
 * upstream can be knocked over by.
 */
export const CEILINGS = [
  {
    name: 'request.maxBodyBytes',
    direction: 'request',
    key: 'maxBodyBytes',
    unit: 'bytes',
    builtin: 4 * MiB,
    what: 'Request body',
    bounds: 'one HTTP request body (a batch counts whole)',
    perMethod: true,
    reason: 'limit_exceeded',
  },
  {
    name: 'request.maxMessageBytes',
    direction: 'request',
    key: 'maxMessageBytes',
    unit: 'bytes',
    builtin: 1 * MiB,
    what: 'Request message',
    bounds: 'one JSON-RPC message from the client',
    perMethod: true,
    reason: 'limit_exceeded',
  },
  {
    name: 'request.maxBatchMessages',
    direction: 'request',
    key: 'maxBatchMessages',
    unit: 'messages',
    builtin: 10_000,
    what: 'Request batch',
    bounds: 'the JSON-RPC messages in one request body (a batch)',
    perMethod: false,
    reason: 'limit_exceeded',
  },
  {
    name: 'request.maxJsonDepth',
    direction: 'request',
    key: 'maxJsonDepth',
    unit: 'levels',
    builtin: 1000,
    what: 'JSON nesting in the request body',
    bounds: 'how deep objects and arrays nest in one request body (a batch array is a level)',
    perMethod: false,
    reason: 'invalid_request',
  },
  {
    name: 'response.maxMessageBytes',
    direction: 'response',
    key: 'maxMessageBytes',
    unit: 'bytes',
    builtin: 4 * MiB,
    what: 'Response message',
    bounds: 'one JSON-RPC message towards the client (a JSON body item or one SSE event)',
    perMethod: true,
    reason: 'limit_exceeded',
  },
] as const satisfies readonly CeilingSpec[];

export type Ceiling = (typeof CEILINGS)[number];
/** A ceiling's name: its config path under `limits`. */
export type LimitName = Ceiling['name'];

export interface CeilingChoiceSpec {
  /** The config path under `limits` (and under every tenant's, method's and tool's block). */
  readonly name: string;
  readonly direction: 'request' | 'response';
  /** The key inside the `request` or `response` block. */
  readonly key: string;
  readonly values: readonly string[];
  /** The value when no layer of the config sets one. */
  readonly builtin: string;
  /** What it decides, for the docs and `explain`. */
  readonly decides: string;
}

/**
 * Choices an operator makes beside the ceilings, in the same blocks (limits, a tenant's, a method's, a tool's)
 * and resolved as they are: the most specific block that sets one wins. The resolver, the config schema and
 * `explain` iterate this table with CEILINGS.
 *
 * `toolCallRefusal`: MCP has hosts show a tool's execution errors (a result with isError) to the model, so it
 * can correct itself, but only allows them to show a JSON-RPC error; `result` words a refused tools/call answer
 * as the former.
 */
export const CEILING_CHOICES = [
  {
    name: 'response.toolCallRefusal',
    direction: 'response',
    key: 'toolCallRefusal',
    values: ['error', 'result'],
    builtin: 'error',
    decides:
      'how an answer to tools/call that mcp-edge refuses reaches the client: a JSON-RPC error (error), or a tool result with isError: true, which hosts show the model (result)',
  },
] as const satisfies readonly CeilingChoiceSpec[];

export type CeilingChoice = (typeof CEILING_CHOICES)[number];
/** The values of one choice, by its key. */
export type ChoiceValue<K extends CeilingChoice['key']> = Extract<
  CeilingChoice,
  { key: K }
>['values'][number];

const BY_NAME = new Map<string, Ceiling>(CEILINGS.map((c) => [c.name, c]));

export function ceilingNamed(name: LimitName): Ceiling {
  const ceiling = BY_NAME.get(name);
  if (ceiling === undefined) throw new Error(`no ceiling named ${name}`);
  return ceiling;
}

/** The ceilings of one unit (the configured-ceiling gauges are one family per unit). */
export function ceilingsIn(unit: CeilingUnit): Ceiling[] {
  return CEILINGS.filter((c) => c.unit === unit);
}

/**
 * One block of ceilings as written at any layer of the config: `request` and `response` keys, the ceilings
 * already numbers, and the choices.
 */
export type CeilingBlock = {
  [D in Ceiling['direction']]?: { [K in Extract<Ceiling, { direction: D }>['key']]?: number } & {
    [K in Extract<CeilingChoice, { direction: D }>['key']]?: ChoiceValue<K>;
  };
};

/** The value a block sets for a ceiling or a choice, if it sets one. */
export function settingIn(block: CeilingBlock, setting: Ceiling): number | undefined;
export function settingIn(block: CeilingBlock, setting: CeilingChoice): string | undefined;
export function settingIn(
  block: CeilingBlock,
  setting: Ceiling | CeilingChoice,
): number | string | undefined {
  const section = block[setting.direction] as Record<string, number | string | undefined> | undefined;
  return section?.[setting.key];
}

/** A value of this ceiling as people read it: `1,048,576 bytes (1.00 MiB)`, `10,000 messages`, `1,000 levels`. */
export function describeCeilingValue(ceiling: Pick<Ceiling, 'unit'>, value: number): string {
  return ceiling.unit === 'bytes'
    ? describeBytes(value)
    : `${value.toLocaleString('en-US')} ${UNIT_NAMES[ceiling.unit].word}`;
}

/** Sizes in messages: exact bytes first (what operators compare with the config), readable units after. */
export function describeBytes(bytes: number): string {
  const units = ['KiB', 'MiB', 'GiB'] as const;
  let value = bytes;
  let unit = '';
  for (const u of units) {
    if (value < 1024) break;
    value /= 1024;
    unit = u;
  }
  const exact = `${bytes.toLocaleString('en-US')} bytes`;
  return unit === '' ? exact : `${exact} (${value.toFixed(value < 10 ? 2 : 1)} ${unit})`;
}
