// Which store a `quotas` section asks for: this process's memory, or a Redis (or Valkey) shared by replicas.
import type { Logger } from 'pino';
import type { QuotasConfig } from '../config/schema.js';
import { redactUrl } from '../core/url-credentials.js';
import { MemoryQuotaStore } from './memory-store.js';
import { RedisQuotaStore } from './redis-store.js';
import type { QuotaStore } from './store.js';

/**
 * Each tenant's share of the memory store's keys: quotas.maxKeys over the tenants the config knows, so that the
 * shares together never pass maxKeys and no tenant's keys can crowd out another's.
 */
export function keysPerTenantOf(config: QuotasConfig, tenants: number): number {
  return Math.floor(config.maxKeys / Math.max(1, tenants));
}

export function quotaStoreOf(config: QuotasConfig, log: Logger, keysPerTenant: number): QuotaStore {
  if (config.store === 'memory') return new MemoryQuotaStore(keysPerTenant);
  return new RedisQuotaStore(config.store, config.storeTimeout, log);
}

/**
 * What makes two sections need two stores: a reload that keeps it keeps the store (and its counts); a new
 * share of the memory store's keys is set on the store it keeps.
 */
export function storeIdentity(config: QuotasConfig): string {
  return config.store === 'memory' ? `memory:${config.maxKeys}` : `${config.store} ${config.storeTimeout}`;
}

/** The store for logs and explain: a Redis URL without its credentials. */
export function describeStore(store: string): string {
  return store === 'memory' ? 'memory (this process only)' : redactUrl(store);
}
