// deploy/helm/mcp-edge/values.schema.json, which `helm lint`, `helm template`, `helm install` and `helm
// upgrade` check every values file and --set against: `config:` is the JSON Schema of mcp-edge's config file
// (src/config/json-schema.ts, the source of schema/mcp-edge.schema.json), so what `check-config` refuses for
// its form (a misspelt key, "4 mb", a port out of range) stops helm before a pod crash-loops on it; the
// chart's own values are described here. `npm run schema` writes it; test/deploy/helm-values.test.ts keeps
// it current.
import { configJsonSchema, type JsonSchema } from '../src/config/json-schema.js';

const text: JsonSchema = { type: 'string' };
const flag: JsonSchema = { type: 'boolean' };
const texts: JsonSchema = { type: 'array', items: text };
/** A Kubernetes object the API server checks (resources, env entries, NetworkPolicy peers). */
const kubernetesObject: JsonSchema = { type: 'object' };
const labels: JsonSchema = { type: 'object', additionalProperties: text };

/** An object of exactly these keys: a misspelt one is refused. */
function strict(properties: Record<string, JsonSchema>, description?: string): JsonSchema {
  return {
    ...(description !== undefined ? { description } : {}),
    type: 'object',
    properties,
    additionalProperties: false,
  };
}

const image = strict({
  repository: { type: 'string', minLength: 1 },
  tag: text,
  pullPolicy: { enum: ['', 'Always', 'IfNotPresent', 'Never'] },
});

/** The chart's values besides `config`. */
function chartValues(tenantKey: JsonSchema): Record<string, JsonSchema> {
  return {
    global: { description: 'What a parent chart passes to its subcharts.', type: 'object' },
    nameOverride: text,
    replicas: { type: 'integer', minimum: 0 },
    nativeSidecar: flag,
    image,
    server: strict({
      image,
      command: texts,
      args: texts,
      env: { type: 'array', items: kubernetesObject },
      resources: kubernetesObject,
    }),
    apiKeys: strict({
      secretName: text,
      header: { type: 'string', minLength: 1 },
      bearer: flag,
      tenants: {
        type: 'object',
        propertyNames: tenantKey,
        additionalProperties: { type: 'array', items: { type: 'string', minLength: 1 } },
      },
    }),
    memory: strict({
      messagesInFlight: { type: 'number', minimum: 1 },
      largestMessageMiB: { type: 'number', exclusiveMinimum: 0 },
      restingMiB: { type: 'number', minimum: 0 },
      headroomMiB: { type: 'number', minimum: 0 },
      factor: { type: 'number', minimum: 0 },
    }),
    resources: kubernetesObject,
    serviceMonitor: strict({ enabled: flag, interval: text, labels }),
    prometheusRule: strict({ enabled: flag, labels }),
    networkPolicy: strict({
      enabled: flag,
      mcpFrom: { type: 'array', items: kubernetesObject },
      metricsNamespace: text,
      metricsFrom: { type: 'array', items: kubernetesObject },
    }),
    podDisruptionBudget: strict({
      enabled: flag,
      maxUnavailable: {
        anyOf: [
          { type: 'integer', minimum: 0 },
          { type: 'string', pattern: '^\\d+%$' },
        ],
      },
    }),
  };
}

export function helmValuesSchema(): JsonSchema {
  const { $schema, title: _title, description: _description, definitions, ...config } = configJsonSchema();
  const tenants = (config.properties as Record<string, JsonSchema>).tenants;
  const tenantKey = (tenants?.propertyNames as JsonSchema | undefined) ?? text;
  return {
    $schema,
    title: 'Values of the mcp-edge Helm chart',
    description:
      'config: is the mcp-edge config file (schema/mcp-edge.schema.json, generated from the same source); `mcp-edge check-config` checks what a schema cannot (tenant references, key hashes, ports that clash).',
    type: 'object',
    properties: {
      ...chartValues(tenantKey),
      config: {
        description: "mcp-edge's config file (config/mcp-edge.example.yaml documents every key).",
        ...config,
      },
    },
    additionalProperties: false,
    definitions,
  };
}

/** The file as written: two-space JSON and a final newline. */
export function helmValuesSchemaText(): string {
  return `${JSON.stringify(helmValuesSchema(), null, 2)}\n`;
}
