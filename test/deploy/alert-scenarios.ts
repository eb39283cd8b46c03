// The scripted scenarios of the alert rules, one per alert (test/deploy/alert-rules.test.ts runs them with
// `promtool test rules`): the series an mcp-edge sidecar would export, minute by minute, and what is firing
// at each evaluation, with the labels and annotations as Alertmanager would receive them.

/** One sidecar as a ServiceMonitor scrape labels it: what every scripted series carries. */
const SIDECAR = {
  job: 'mcp-edge',
  namespace: 'mcp',
  service: 'mcp-server-metrics',
  pod: 'mcp-server-7d4b9-x2x8q',
  instance: '10.0.0.7:9464',
  upstream: 'http://127.0.0.1:3000/mcp',
};
/** The labels an alert grouped by (job, namespace, service, pod, upstream) keeps. */
const { instance: _instance, ...GROUPED } = SIDECAR;

function series(name: string, labels: Record<string, string> = {}): string {
  const all = { ...SIDECAR, ...labels };
  return `${name}{${Object.entries(all)
    .map(([key, value]) => `${key}=${JSON.stringify(value)}`)
    .join(', ')}}`;
}

export interface Expected {
  exp_labels: Record<string, string>;
  exp_annotations: Record<string, string>;
}
export interface Scenario {
  alert: string;
  input_series: { series: string; values: string }[];
  /** Evaluation times (minutes) and what is firing then: [] before it fires and after it resolves. */
  evaluations: [number, Expected[]][];
}

export function runbook(alert: string): string {
  return `docs/operations.md#${alert.toLowerCase()}`;
}

const ACME_EXPORT = { tenant: 'acme', method: 'tools/call', tool: 'export' };

export const SCENARIOS: Scenario[] = [
  {
    alert: 'McpEdgeDown',
    // Scraped, then 4 failed scrapes, then back.
    input_series: [{ series: series('up'), values: '1 1 0x4 1x4' }],
    evaluations: [
      [1, []],
      [
        4,
        [
          {
            exp_labels: { severity: 'critical', ...SIDECAR },
            exp_annotations: {
              summary: 'mcp-edge is down (10.0.0.7:9464)',
              description:
                'Prometheus could not scrape mcp-edge at 10.0.0.7:9464 (job mcp-edge, pod mcp-server-7d4b9-x2x8q) for a minute. Clients of the MCP servers behind it get no answers.',
              runbook_url: runbook('McpEdgeDown'),
            },
          },
        ],
      ],
      [8, []],
    ],
  },
  {
    alert: 'McpEdgeRefusedResponsesSpike',
    // 12 refusals a minute (0.2/s) for 15 minutes, then none.
    input_series: [
      {
        series: series('mcp_edge_limit_exceeded_total', {
          limit: 'response.maxMessageBytes',
          direction: 'response',
          action: 'rejected',
          ...ACME_EXPORT,
        }),
        values: '0+12x15 180x20',
      },
    ],
    evaluations: [
      [3, []],
      [
        10,
        [
          {
            exp_labels: { severity: 'warning', ...GROUPED, tenant: 'acme' },
            exp_annotations: {
              summary: 'mcp-edge is refusing oversized responses for tenant acme',
              description:
                '200m responses/s from http://127.0.0.1:3000/mcp for tenant acme went over their response.maxMessageBytes ceiling in the last 5 minutes and were replaced by a limit error. Check the "Top offenders" panel for the tools, then raise that tool\'s ceiling or make the server return less.',
              runbook_url: runbook('McpEdgeRefusedResponsesSpike'),
            },
          },
        ],
      ],
      [25, []],
    ],
  },
  {
    alert: 'McpEdgeTenantNearCeiling',
    // 10 responses/s for each tool. export: from minute 10 to 30, 1 in 10 above 80% of its ceiling.
    // search: 17 KiB responses against a 32 KiB ceiling (53%), none near it. A p99 interpolated in the
    // power-of-two buckets reads search at 99.5% of its ceiling, the old rule's false alarm.
    input_series: [
      {
        series: series('mcp_edge_message_bytes_count', {
          direction: 'response',
          kind: 'result',
          ...ACME_EXPORT,
        }),
        values: '0+600x60',
      },
      {
        series: series('mcp_edge_near_ceiling_messages_total', {
          limit: 'response.maxMessageBytes',
          direction: 'response',
          ...ACME_EXPORT,
        }),
        values: '0x10 0+60x20 1200x30',
      },
      ...(['16384', '32768', '+Inf'] as const).map((le) => ({
        series: series('mcp_edge_message_bytes_bucket', {
          direction: 'response',
          kind: 'result',
          tenant: 'acme',
          method: 'tools/call',
          tool: 'search',
          le,
        }),
        values: le === '16384' ? '0x60' : '0+600x60',
      })),
      {
        series: series('mcp_edge_message_bytes_count', {
          direction: 'response',
          kind: 'result',
          tenant: 'acme',
          method: 'tools/call',
          tool: 'search',
        }),
        values: '0+600x60',
      },
      ...[
        { method: '', tool: '', bytes: '4194304' },
        { method: 'tools/call', tool: 'export', bytes: '1048576' },
        { method: 'tools/call', tool: 'search', bytes: '32768' },
      ].map(({ bytes, ...subject }) => ({
        series: series('mcp_edge_limit_bytes', {
          tenant: 'acme',
          limit: 'response.maxMessageBytes',
          ...subject,
        }),
        values: `${bytes}x60`,
      })),
      {
        series: series('mcp_edge_near_ceiling_messages_total', {
          limit: 'response.maxMessageBytes',
          direction: 'response',
          tenant: 'acme',
          method: 'tools/call',
          tool: 'search',
        }),
        values: '0x60',
      },
    ],
    evaluations: [
      [20, []],
      [
        28,
        [
          {
            exp_labels: { severity: 'warning', ...GROUPED, ...ACME_EXPORT },
            exp_annotations: {
              summary: 'Tenant acme is near its response ceiling for tools/call export',
              description:
                "10% of the responses of tenant acme, method tools/call, tool export on http://127.0.0.1:3000/mcp were above metrics.nearCeilingPercent (default 80) percent of their response.maxMessageBytes ceiling in the last 10 minutes: the p99 is above it. Responses past the ceiling will be refused in enforce mode. See the dashboard's headroom panel.",
              runbook_url: runbook('McpEdgeTenantNearCeiling'),
            },
          },
        ],
      ],
      [45, []],
    ],
  },
  {
    alert: 'McpEdgeHostBudgetOverflow',
    // 3 results a minute (0.05/s) over Claude Code's budget for 30 minutes, then none.
    input_series: [
      {
        series: series('mcp_edge_host_budget_exceeded_total', {
          host: 'claude-code',
          tenant: 'acme',
          tool: 'export',
          unit: 'tokens',
          action: 'observed',
        }),
        values: '0+3x30 90x30',
      },
    ],
    evaluations: [
      [5, []],
      [
        20,
        [
          {
            exp_labels: {
              severity: 'warning',
              ...GROUPED,
              host: 'claude-code',
              tenant: 'acme',
              tool: 'export',
            },
            exp_annotations: {
              summary: "Results of tool export overflow claude-code's budget (tenant acme)",
              description:
                '50m results/s of tool export for tenant acme on job mcp-edge, pod mcp-server-7d4b9-x2x8q were over the budget of claude-code in the last 10 minutes. That host cuts or files them away (or mcp-edge refused them): make the tool return less, or give it pagination. Run `npx mcp-edge explain --host claude-code` for the budget and its source.',
              runbook_url: runbook('McpEdgeHostBudgetOverflow'),
            },
          },
        ],
      ],
      [45, []],
    ],
  },
  {
    alert: 'McpEdgeUpstreamFailures',
    // 10 answered exchanges/s throughout; from minute 6 to 16 also 1/s that end in a 502 (9.091%).
    input_series: [
      {
        series: series('mcp_edge_requests_total', {
          tenant: 'acme',
          http_method: 'POST',
          status: '200',
          outcome: 'forwarded',
        }),
        values: '0+600x40',
      },
      {
        series: series('mcp_edge_requests_total', {
          tenant: 'acme',
          http_method: 'POST',
          status: '502',
          outcome: 'upstream_unreachable',
        }),
        values: '0x5 0+60x10 600x25',
      },
    ],
    evaluations: [
      [4, []],
      [
        16,
        [
          {
            exp_labels: { severity: 'warning', ...GROUPED },
            exp_annotations: {
              summary: 'The MCP server behind mcp-edge fails 9.091% of exchanges',
              description:
                '9.091% of the exchanges through job mcp-edge, pod mcp-server-7d4b9-x2x8q ended in a 502 or 504 from http://127.0.0.1:3000/mcp in the last 5 minutes. The outcome label of mcp_edge_requests_total says which: upstream_unreachable, upstream_timeout, upstream_body_failed, upstream_stream_failed.',
              runbook_url: runbook('McpEdgeUpstreamFailures'),
            },
          },
        ],
      ],
      [25, []],
    ],
  },
  {
    alert: 'McpEdgeUpstreamAtCapacity',
    // From minute 5 to 15, 6 new sessions a minute refused with a 503 (stdio maxProcesses); a 413 refusal
    // (a ceiling) and a 503 of the shutdown do not count.
    input_series: [
      {
        series: series('mcp_edge_requests_total', {
          tenant: 'acme',
          http_method: 'POST',
          status: '503',
          outcome: 'upstream_capacity',
        }),
        values: '0x5 0+6x10 60x20',
      },
      {
        series: series('mcp_edge_requests_total', {
          tenant: 'acme',
          http_method: 'POST',
          status: '413',
          outcome: 'refused',
        }),
        values: '0+60x35',
      },
      {
        series: series('mcp_edge_requests_total', {
          tenant: 'globex',
          http_method: 'GET',
          status: '503',
          outcome: 'shutdown',
        }),
        values: '0+60x35',
      },
    ],
    evaluations: [
      [4, []],
      [
        13,
        [
          {
            exp_labels: { severity: 'warning', ...GROUPED, tenant: 'acme' },
            exp_annotations: {
              summary: 'mcp-edge turns tenant acme away for want of upstream capacity',
              description:
                '100m requests/s of tenant acme on job mcp-edge, pod mcp-server-7d4b9-x2x8q got a 503 in the last 5 minutes: every stdio child slot (upstream.stdio.maxProcesses, maxProcessesPerTenant) or every call connection to http://127.0.0.1:3000/mcp (upstream.maxConnections) was taken.',
              runbook_url: runbook('McpEdgeUpstreamAtCapacity'),
            },
          },
        ],
      ],
      [25, []],
    ],
  },
  {
    alert: 'McpEdgeStdioProcessesNearLimit',
    // maxProcesses 16; 8 children, then 15 (94%) from minute 5 to 20, then 4. A pod with an HTTP upstream
    // exports neither gauge and never alerts.
    input_series: [
      { series: series('mcp_edge_stdio_processes'), values: '8x4 15x15 4x10' },
      { series: series('mcp_edge_stdio_processes_limit'), values: '16x29' },
      {
        series: series('mcp_edge_requests_total', {
          pod: 'mcp-server-7d4b9-http',
          tenant: 'acme',
          http_method: 'POST',
          status: '200',
          outcome: 'forwarded',
        }),
        values: '0+60x29',
      },
    ],
    evaluations: [
      [4, []],
      [
        17,
        [
          {
            exp_labels: { severity: 'warning', ...GROUPED },
            exp_annotations: {
              summary: 'mcp-edge runs 93.75% of its stdio processes',
              description:
                'The stdio MCP server children of job mcp-edge, pod mcp-server-7d4b9-x2x8q (http://127.0.0.1:3000/mcp) have been above 80% of upstream.stdio.maxProcesses for 10 minutes (93.75%). New sessions take the places of idle sessions, and get a 503 once every slot is held by a session in use: raise maxProcesses if the memory allows, or lower upstream.stdio.idleTimeoutWithoutStream so abandoned sessions end sooner.',
              runbook_url: runbook('McpEdgeStdioProcessesNearLimit'),
            },
          },
        ],
      ],
      [25, []],
    ],
  },
  {
    alert: 'McpEdgeMemoryNearLimit',
    // A 704 MiB limit; RSS 500 MB, then 700 MB (95%) from minute 5 to 15, then 500 MB again. A second pod
    // without a memory limit at the same RSS never alerts.
    input_series: [
      { series: series('process_resident_memory_bytes'), values: '500000000x4 700000000x10 500000000x10' },
      { series: series('mcp_edge_memory_limit_bytes'), values: '738197504x25' },
      {
        series: series('process_resident_memory_bytes', { pod: 'mcp-server-7d4b9-nolimit' }),
        values: '700000000x25',
      },
    ],
    evaluations: [
      [4, []],
      [
        12,
        [
          {
            exp_labels: { severity: 'warning', ...GROUPED },
            exp_annotations: {
              summary: 'mcp-edge uses 94.83% of its memory limit',
              description:
                "The resident memory of mcp-edge on job mcp-edge, pod mcp-server-7d4b9-x2x8q has been above 90% of its container's memory limit for 5 minutes (94.83%). Size the limit by docs/operations.md#sizing-memory, or lower the ceilings (limits.hardMaxBytes) that decide how much it holds.",
              runbook_url: runbook('McpEdgeMemoryNearLimit'),
            },
          },
        ],
      ],
      [20, []],
    ],
  },
  {
    alert: 'McpEdgeConfigReloadFailed',
    // Loaded at start; a broken file at minute 3; the fixed file at minute 5.
    input_series: [{ series: series('mcp_edge_config_last_reload_success'), values: '1x2 0x2 1x5' }],
    evaluations: [
      [2, []],
      [
        4,
        [
          {
            exp_labels: { severity: 'warning', ...SIDECAR },
            exp_annotations: {
              summary: 'mcp-edge refused its new configuration',
              description:
                "The last configuration reload of the edge in front of http://127.0.0.1:3000/mcp (10.0.0.7:9464) failed. The previous configuration stays in force; see the edge's log for the key and line that were rejected.",
              runbook_url: runbook('McpEdgeConfigReloadFailed'),
            },
          },
        ],
      ],
      [7, []],
    ],
  },
  {
    alert: 'McpEdgeQuotaStoreFailing',
    // Redis answers, then 30 failed store operations a minute for 6 minutes, then none again.
    input_series: [
      {
        series: series('mcp_edge_quota_store_errors_total', { store: 'redis', error: 'unavailable' }),
        values: '0x3 0+30x6 180x12',
      },
    ],
    evaluations: [
      [3, []],
      [
        8,
        [
          {
            exp_labels: { severity: 'warning', ...GROUPED, store: 'redis' },
            exp_annotations: {
              summary: 'mcp-edge cannot use its quota store (redis)',
              description:
                "The quota store of the edge in front of http://127.0.0.1:3000/mcp (pod mcp-server-7d4b9-x2x8q) fails 400m times a second: quotas.onStoreError decides every exchange under a rule (allow: not counted; refuse: 503). See the edge's log for the store's error.",
              runbook_url: runbook('McpEdgeQuotaStoreFailing'),
            },
          },
        ],
      ],
      [16, []],
    ],
  },
];
