// Trace context toward an upstream that carries no headers (a stdio child): the MCP specification (SEP-414)
// and the OpenTelemetry conventions for MCP carry W3C trace context as `params._meta.traceparent` and
// `tracestate` of a request or notification. The entries are spliced into the message's bytes, every other
// byte as the client sent it; written last in `_meta`, they are the ones JSON.parse keeps over a client's own.
import { OPEN_BRACE } from './bytes.js';
import { keyIs } from './json-literals.js';
import { INVALID, scanValue, skipWhitespace, walkObject } from './json-scan.js';

const encoder = new TextEncoder();

/** `"k":"v"` pairs joined by commas (keys and values as JSON strings). */
function members(entries: Readonly<Record<string, string>>): string {
  return Object.entries(entries)
    .map(([key, value]) => `${JSON.stringify(key)}:${JSON.stringify(value)}`)
    .join(',');
}

function splice(bytes: Uint8Array, at: number, text: string): Uint8Array {
  const inserted = encoder.encode(text);
  const out = new Uint8Array(bytes.length + inserted.length);
  out.set(bytes.subarray(0, at), 0);
  out.set(inserted, at);
  out.set(bytes.subarray(at), at + inserted.length);
  return out;
}

/** The last member named `name` of the object opening at `open`: its value's span, the object's end, whether it has members. */
function member(
  bytes: Uint8Array,
  open: number,
  depth: number,
  name: string,
): { value: [number, number] | undefined; close: number; empty: boolean; method: boolean } | undefined {
  let value: [number, number] | undefined;
  let empty = true;
  let method = false;
  const end = walkObject(bytes, open, depth, (keyStart, keyEnd, valueStart) => {
    empty = false;
    const valueEnd = scanValue(bytes, valueStart, depth);
    if (valueEnd >= 0 && keyIs(bytes, keyStart, keyEnd, name)) value = [valueStart, valueEnd];
    else if (depth === 1 && keyIs(bytes, keyStart, keyEnd, 'method')) method = true;
    return valueEnd;
  });
  if (end === INVALID) return undefined;
  return { value, close: end - 1, empty, method };
}

/**
 * The request or notification with `entries` in its `params._meta`: added to a `_meta` object, or a `_meta`
 * added to `params`, or `params` added. Undefined when the bytes are not one JSON object with a method (a
 * response is never written to), or `params` or `_meta` is there but not an object.
 */
export function withMetaEntries(
  bytes: Uint8Array,
  entries: Readonly<Record<string, string>>,
): Uint8Array | undefined {
  const open = skipWhitespace(bytes, 0);
  if (bytes[open] !== OPEN_BRACE) return undefined;
  const message = member(bytes, open, 1, 'params');
  if (message === undefined || !message.method) return undefined;
  const pairs = members(entries);
  if (message.value === undefined) {
    return splice(bytes, message.close, `${message.empty ? '' : ','}"params":{"_meta":{${pairs}}}`);
  }
  const [paramsStart] = message.value;
  if (bytes[paramsStart] !== OPEN_BRACE) return undefined;
  const params = member(bytes, paramsStart, 2, '_meta');
  if (params === undefined) return undefined;
  if (params.value === undefined) {
    return splice(bytes, params.close, `${params.empty ? '' : ','}"_meta":{${pairs}}`);
  }
  const [metaStart] = params.value;
  if (bytes[metaStart] !== OPEN_BRACE) return undefined;
  const meta = member(bytes, metaStart, 3, '');
  if (meta === undefined) return undefined;
  return splice(bytes, meta.close, `${meta.empty ? '' : ','}${pairs}`);
}
