// Which kind of Upstream a config asks for: upstream.url (HTTP) or upstream.stdio (a spawned server).
import type { Logger } from 'pino';
import type { EdgeConfig } from '../config/schema.js';
import { httpUpstream } from './http-upstream.js';
import { stdioUpstream } from './stdio-upstream.js';
import type { Upstream } from './upstream.js';

export function upstreamOf(config: EdgeConfig, log: Logger): Upstream {
  return config.upstream.stdio !== undefined ? stdioUpstream(config, log) : httpUpstream(config, log);
}
