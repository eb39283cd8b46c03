// `npm run schema`: regenerates schema/mcp-edge.schema.json from the zod schema of the config
// (src/config/schema.ts). Run it after changing that schema; test/unit/config-json-schema.test.ts fails until then.
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { configJsonSchemaText } from '../src/config/json-schema.js';

const target = fileURLToPath(new URL('../schema/mcp-edge.schema.json', import.meta.url));
writeFileSync(target, configJsonSchemaText());
process.stdout.write(`wrote ${target}\n`);
