// The tenants a config knows: every tenant an exchange can be attributed to (a resolver only ever yields one of
// these), so anything kept per tenant is bounded by the config.
import type { EdgeConfig } from '../config/schema.js';

/** Every tenant an exchange can be attributed to: the configured ones and the default. */
export function tenantsOf(config: Pick<EdgeConfig, 'tenancy' | 'tenants'>): string[] {
  return [...new Set([config.tenancy.default, ...Object.keys(config.tenants)])];
}
