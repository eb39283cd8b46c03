// Host profiles: what a model's host (Claude Code, Gemini CLI, ...) does with a tool result, in its own unit.
// These are observations of other programs, not MCP rules: each number carries the public evidence it comes
// from and the date of that evidence (docs/limits.md, "Host budgets"). A number without a source is not here.

/** The unit a host counts a tool result in. */
export type HostUnit = 'tokens' | 'characters' | 'bytes' | 'lines';

export const HOST_UNITS: readonly HostUnit[] = ['tokens', 'characters', 'bytes', 'lines'];

/**
 * Which result channels the host puts in front of the model: `content` (text blocks and embedded text
 * resources), `structured` (structuredContent serialized as JSON), `both`, or `structured_else_content`
 * (structuredContent when the result has one, else content: what Claude Code and Codex do).
 */
export type HostChannels = 'content' | 'structured' | 'both' | 'structured_else_content';

export const HOST_CHANNELS: readonly HostChannels[] = [
  'content',
  'structured',
  'both',
  'structured_else_content',
];

export interface HostBudget {
  unit: HostUnit;
  /** Past this many units the host cuts, files away or refuses the result. */
  limit: number;
}

/**
 * What a host allows the tool definitions (name, description, schemas) it puts in front of the model in
 * every conversation: apart from `budgets`, which bound each tool result. Only hosts with a dated public
 * source for such a figure have one.
 */
export interface CatalogBudget {
  budgets: readonly HostBudget[];
  /** What the host does when the definitions are over it. */
  past: string;
  source: string;
  sourceDate: string;
}

export interface HostProfile {
  /** The `host` label value and the name `explain --host` takes. */
  name: string;
  /** Readable name for messages to the model and the operator. */
  title: string;
  /**
   * Case-insensitive patterns (`*` matches any run of characters) tried against the client's name: the
   * `clientInfo.name` of initialize or of `_meta["io.modelcontextprotocol/clientInfo"]`, else the first
   * product of its User-Agent.
   */
  match: readonly string[];
  /** A tool result over any of them is over the host's budget. */
  budgets: readonly HostBudget[];
  /** The budget of the tool definitions, where the host has one (mcp-edge audit judges a catalog by it). */
  catalog: CatalogBudget | undefined;
  channels: HostChannels;
  /** What the host does with a result past its budget. */
  past: string;
  /** Where each number comes from (public evidence) and the date of that evidence. */
  source: string;
  sourceDate: string;
}

/**
 * The built-in profiles. Hosts named in design.md section 7 whose numbers have no dated public source here
 * (Cline; GitHub Copilot CLI, whose 10 KB report was closed as fixed) are left out: configure them in `hosts:`.
 * Only Claude Code has a catalog budget: no dated public source gives one of Gemini CLI (its 512 is the
 * Gemini API's count of function declarations, not a size), Codex (its 10 KiB and 256 lines bound each tool
 * output) or Claude Desktop.
 */
export const BUILTIN_HOST_PROFILES: readonly HostProfile[] = Object.freeze([
  {
    name: 'claude-code',
    title: 'Claude Code',
    match: ['claude-code*', 'claude code*'],
    budgets: [{ unit: 'tokens', limit: 25_000 }],
    channels: 'structured_else_content',
    past: 'older versions fail the call ("response (N tokens) exceeds maximum allowed tokens (25000). Please use pagination, filtering, or limit parameters"); newer ones save the result to a file and show the model a preview. Warns from 10,000 tokens. MAX_MCP_OUTPUT_TOKENS changes the budget; a tool\'s _meta["anthropic/maxResultSizeChars"] (up to 500,000) raises it per tool.',
    source:
      'Claude Code settings docs, MAX_MCP_OUTPUT_TOKENS "default: 25000" (quoted in github.com/BeehiveInnovations/pal-mcp-server/issues/105, 2025-06-21); the error text in github.com/rollbar/rollbar-mcp-server/issues/28 (2025-08-06); 10,000-token warning in github.com/anthropics/claude-code/issues/20342 (2026-01-23); structuredContent shown instead of content when present: github.com/anthropics/claude-code/issues/79944 (Claude Code 2.1.280, 2026-09-22)',
    sourceDate: '2026-09-22',
    catalog: {
      budgets: [{ unit: 'tokens', limit: 25_000 }],
      past: '/doctor warns "Large MCP tools context (~N tokens > 25,000)" and lists each server\'s tools and tokens; the definitions take that much of every conversation. The figure is for the tools of every MCP server together.',
      source:
        'Claude Code /doctor, "Context Usage Warnings": "Large MCP tools context (~144,802 tokens > 25,000)" in github.com/anthropics/claude-code/issues/12241 (Claude Code 2.0.50, 2025-11-24) and "(~44,400 tokens > 25,000)" in github.com/getsentry/XcodeBuildMCP/issues/153 (2025-12-26)',
      sourceDate: '2025-12-26',
    },
  },
  {
    name: 'gemini-cli',
    title: 'Gemini CLI',
    match: ['gemini-cli*', 'gemini cli*'],
    budgets: [{ unit: 'characters', limit: 40_000 }],
    channels: 'content',
    past: 'keeps the first 20% and the last 80% of the threshold with an "[N characters omitted]" marker; the full output goes to a file (tools.truncateToolOutputThreshold; 0 disables)',
    source:
      'github.com/google-gemini/gemini-cli/pull/18446 (merged, 2026-02-06: default truncateToolOutputThreshold 40,000 characters, head 20% + tail 80%); github.com/google-gemini/gemini-cli/pull/19365 (merged, 2026-02-18: applies it to MCP tool text output)',
    sourceDate: '2026-02-18',
    catalog: undefined,
  },
  {
    name: 'codex',
    title: 'Codex CLI',
    match: ['codex*'],
    budgets: [
      { unit: 'bytes', limit: 10_240 },
      { unit: 'lines', limit: 256 },
    ],
    channels: 'structured_else_content',
    past: 'the model sees the output cut in the middle with a marker ("[... output truncated to fit 10240 bytes ...]", "[... omitted N of M lines ...]")',
    source:
      'github.com/openai/codex/issues/6544 (2025-11-12: every tool output, MCP included, capped at 10 KiB or 256 lines since v0.56); github.com/openai/codex/issues/5913 (2025-11-05: the markers); structuredContent preferred over content: github.com/openai/codex/pull/2594 (merged, 2025-08-22)',
    sourceDate: '2025-11-12',
    catalog: undefined,
  },
  {
    name: 'claude-desktop',
    title: 'Claude Desktop',
    match: ['claude-ai*', 'claude desktop*', 'claude-desktop*'],
    budgets: [{ unit: 'bytes', limit: 1_000_000 }],
    channels: 'both',
    past: 'the call fails with "Tool result is too large. Maximum size is 1MB."',
    source:
      'github.com/DitriXNew/EDT-MCP/issues/55 (2026-02-27) and github.com/anthropics/claude-code/issues/66519 (2026-06-09): "Tool result is too large. Maximum size is 1MB." (1MB taken as 1,000,000 bytes; which channels count is not documented, so both are)',
    sourceDate: '2026-06-09',
    catalog: undefined,
  },
]);

/** The label of every host no profile matches (and of calls with no identity at all). */
export const OTHER_HOST = 'other';
