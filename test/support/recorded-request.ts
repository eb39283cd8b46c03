import type { IncomingHttpHeaders, IncomingMessage } from 'node:http';
import { headerValue as firstHeaderValue } from '../../src/core/headers.js';

/** What a fixture server saw of one incoming HTTP request (headers as node:http lower-cases them). */
export interface RecordedRequest {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
}

export function recordRequest(req: IncomingMessage): RecordedRequest {
  return { method: req.method ?? '', url: req.url ?? '', headers: { ...req.headers } };
}

/** The first value of a header, whether node:http gave it as a string or an array. */
export function headerValue(headers: IncomingHttpHeaders, name: string): string | undefined {
  return firstHeaderValue(headers, name.toLowerCase());
}
