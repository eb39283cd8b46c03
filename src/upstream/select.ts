// Which kind of Upstream a config asks for: upstream.stdio (a spawned server) or upstream.url (HTTP). A new
// kind is its file (an UpstreamKind) and its line here; the schema says which sections exclude each other.
import type { Logger } from 'pino';
import type { EdgeConfig } from '../config/schema.js';
import { httpKind } from './http-upstream.js';
import { stdioKind } from './stdio-upstream.js';
import type { Upstream, UpstreamKind } from './upstream.js';

/** The kinds, in the order they are asked; the last one (HTTP) is the default. */
const KINDS: readonly UpstreamKind[] = [stdioKind, httpKind];

export function upstreamKindOf(config: EdgeConfig): UpstreamKind {
  return KINDS.find((kind) => kind.configured(config)) ?? httpKind;
}

export function upstreamOf(config: EdgeConfig, log: Logger): Upstream {
  return upstreamKindOf(config).create(config, log);
}

/** The upstream in one line, as its kind describes it: never a credential, an argument or an env value. */
export function describeUpstream(config: EdgeConfig): string {
  return upstreamKindOf(config).describe(config);
}
