// Which store a `quotas` section asks for: this process's memory, or a Redis (or Valkey) shared by replicas.
import type { Logger } from 'pino';
import type { QuotasConfig } from '../config/schema.js';
import { redactUrl } from '../core/url-credentials.js';
import { MemoryQuotaStore } from './memory-store.js';
import { RedisQuotaStore } from './redis-store.js';
import type { QuotaStore } from './store.js';

export function quotaStoreOf(config: QuotasConfig, log: Logger): QuotaStore {
  if (config.store === 'memory') return new MemoryQuotaStore(config.maxKeys);
  return new RedisQuotaStore(config.store, config.storeTimeout, log);
}

/** What makes two sections need two stores: a reload that keeps it keeps the store (and its counts). */
export function storeIdentity(config: QuotasConfig): string {
  return config.store === 'memory' ? `memory:${config.maxKeys}` : `${config.store} ${config.storeTimeout}`;
}

/** The store for logs and explain: a Redis URL without its credentials. */
export function describeStore(store: string): string {
  return store === 'memory' ? 'memory (this process only)' : redactUrl(store);
}
