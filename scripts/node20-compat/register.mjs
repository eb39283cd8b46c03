// `node --import ./scripts/node20-compat/register.mjs ...`: lets @modelcontextprotocol/conformance
// (built for Node 22) load on Node 20 by redirecting its `fs` import to a module that adds globSync.
import { register } from 'node:module';

register('./hooks.mjs', import.meta.url);
