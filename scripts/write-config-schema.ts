// `npm run schema`: regenerates, from the zod schema of the config (src/config/schema.ts),
// schema/mcp-edge.schema.json and the Helm chart's values.schema.json (whose `config:` is that schema). Run
// it after changing the config schema or the chart's values; test/unit/config-json-schema.test.ts and
// test/deploy/helm-values.test.ts fail until then.
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { configJsonSchemaText } from '../src/config/json-schema.js';
import { helmValuesSchemaText } from './helm-values-schema.js';

for (const [path, text] of [
  ['../schema/mcp-edge.schema.json', configJsonSchemaText()],
  ['../deploy/helm/mcp-edge/values.schema.json', helmValuesSchemaText()],
] as const) {
  const target = fileURLToPath(new URL(path, import.meta.url));
  writeFileSync(target, text);
  process.stdout.write(`wrote ${target}\n`);
}
