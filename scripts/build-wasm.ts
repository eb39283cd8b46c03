// `npm run build:wasm`: regenerates src/core/string-scan-wasm.ts from src/core/string-scan.wat. Run it after
// changing the .wat; test/unit/string-scan.test.ts fails until then.
import { writeFileSync } from 'node:fs';
import { MODULE_FILE, stringScanModuleText } from './wasm-module.js';

writeFileSync(MODULE_FILE, await stringScanModuleText());
process.stdout.write(`wrote ${MODULE_FILE}\n`);
