// Module resolve hook (runs in the loader thread). The conformance bundle imports `globSync` from
// `fs`, which Node 20 lacks, so it fails to link; only that package's `fs` import is sent to
// fs-with-glob-sync.mjs, and only on a Node without fs.globSync.
import * as fs from 'node:fs';

const CONFORMANCE_PACKAGE = '/node_modules/@modelcontextprotocol/conformance/';
const SHIM_URL = new URL('./fs-with-glob-sync.mjs', import.meta.url).href;
const NEEDS_SHIM = !('globSync' in fs);

export async function resolve(specifier, context, nextResolve) {
  const fromConformance = context.parentURL?.includes(CONFORMANCE_PACKAGE) === true;
  if (NEEDS_SHIM && fromConformance && (specifier === 'fs' || specifier === 'node:fs')) {
    return { url: SHIM_URL, shortCircuit: true };
  }
  return nextResolve(specifier, context);
}
