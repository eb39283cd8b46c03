// A real OTLP/HTTP trace receiver on 127.0.0.1 (an ephemeral port): it takes what an OpenTelemetry exporter
// sends to /v1/traces, decodes it (http/protobuf with the OpenTelemetry project's own .proto definitions in
// test/fixtures/otlp-proto, or OTLP/JSON for http/json) and keeps each span flat. It can hold every answer for
// a while (a collector that is slow) to test what the edge does meanwhile.
import { once } from 'node:events';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import protobuf from 'protobufjs';

export type AttributeValue = string | number | boolean;

/** One span as the receiver decoded it. */
export interface ReceivedSpan {
  traceId: string;
  spanId: string;
  parentSpanId: string | undefined;
  name: string;
  /** SpanKind in OTLP's numbering: 1 internal, 2 server, 3 client. */
  kind: number;
  attributes: Record<string, AttributeValue>;
  /** 0 unset, 1 ok, 2 error. */
  status: { code: number; message: string | undefined };
  resource: Record<string, AttributeValue>;
}

export interface OtlpReceiver {
  /** The traces endpoint, for OTEL_EXPORTER_OTLP_TRACES_ENDPOINT. */
  url: string;
  spans: ReceivedSpan[];
  /** Export requests received (answered or still held). */
  requests: number;
  /** The content types the exports came in (which OTLP protocol the exporter spoke). */
  contentTypes: ReadonlySet<string>;
  /** Resolves once spans matching `match` have arrived (at least `count`). */
  waitFor(match: (span: ReceivedSpan) => boolean, count?: number): Promise<ReceivedSpan[]>;
  close(): Promise<void>;
}

export interface OtlpReceiverOptions {
  /** Answer each export request only after this long (a slow collector); 0 answers at once. */
  answerAfterMs?: number;
}

interface OtlpAnyValue {
  stringValue?: string;
  intValue?: number | string;
  doubleValue?: number;
  boolValue?: boolean;
}
interface OtlpKeyValue {
  key: string;
  value: OtlpAnyValue;
}
interface OtlpSpan {
  /** Hex in OTLP/JSON; bytes in protobuf. */
  traceId: string | Uint8Array;
  spanId: string | Uint8Array;
  parentSpanId?: string | Uint8Array;
  name: string;
  kind: number;
  attributes?: OtlpKeyValue[];
  status?: { code?: number; message?: string };
}
interface OtlpTraceRequest {
  resourceSpans?: {
    resource?: { attributes?: OtlpKeyValue[] };
    scopeSpans?: { spans?: OtlpSpan[] }[];
  }[];
}

function attributeValue(value: OtlpAnyValue): AttributeValue {
  if (value.stringValue !== undefined) return value.stringValue;
  if (value.intValue !== undefined) return Number(value.intValue);
  if (value.doubleValue !== undefined) return value.doubleValue;
  if (value.boolValue !== undefined) return value.boolValue;
  throw new Error(`an attribute value the receiver does not read: ${JSON.stringify(value)}`);
}

function attributesOf(list: OtlpKeyValue[] | undefined): Record<string, AttributeValue> {
  const attributes: Record<string, AttributeValue> = {};
  for (const { key, value } of list ?? []) attributes[key] = attributeValue(value);
  return attributes;
}

/** An id as hex: OTLP/JSON writes it so, protobuf carries its bytes. */
function hexOf(id: string | Uint8Array | undefined): string {
  if (id === undefined) return '';
  return typeof id === 'string' ? id : Buffer.from(id).toString('hex');
}

const PROTO_ROOT = fileURLToPath(new URL('../fixtures/otlp-proto/', import.meta.url));
let exportRequest: protobuf.Type | undefined;

/** ExportTraceServiceRequest of opentelemetry-proto, loaded once. */
function exportRequestType(): protobuf.Type {
  if (exportRequest !== undefined) return exportRequest;
  const root = new protobuf.Root();
  root.resolvePath = (_origin, target) => `${PROTO_ROOT}${target}`;
  root.loadSync('opentelemetry/proto/collector/trace/v1/trace_service.proto', { keepCase: false });
  exportRequest = root.lookupType('opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest');
  return exportRequest;
}

/** The spans of one http/protobuf ExportTraceServiceRequest. */
export function decodeOtlpProtobuf(body: Uint8Array): ReceivedSpan[] {
  const type = exportRequestType();
  const request = type.toObject(type.decode(body), { longs: Number, enums: Number }) as OtlpTraceRequest;
  return spansOf(request);
}

/** The spans of one OTLP/JSON ExportTraceServiceRequest. */
export function decodeOtlpJson(body: string): ReceivedSpan[] {
  return spansOf(JSON.parse(body) as OtlpTraceRequest);
}

function spansOf(request: OtlpTraceRequest): ReceivedSpan[] {
  const spans: ReceivedSpan[] = [];
  for (const resourceSpans of request.resourceSpans ?? []) {
    const resource = attributesOf(resourceSpans.resource?.attributes);
    for (const scopeSpans of resourceSpans.scopeSpans ?? []) {
      for (const span of scopeSpans.spans ?? []) {
        spans.push({
          traceId: hexOf(span.traceId),
          spanId: hexOf(span.spanId),
          parentSpanId: hexOf(span.parentSpanId) || undefined,
          name: span.name,
          kind: span.kind,
          attributes: attributesOf(span.attributes),
          status: { code: span.status?.code ?? 0, message: span.status?.message || undefined },
          resource,
        });
      }
    }
  }
  return spans;
}

export async function startOtlpReceiver(options: OtlpReceiverOptions = {}): Promise<OtlpReceiver> {
  const spans: ReceivedSpan[] = [];
  const waiters = new Set<() => void>();
  const held = new Set<ServerResponse>();
  let requests = 0;
  const contentTypes = new Set<string>();
  const answer = (res: ServerResponse) => {
    held.delete(res);
    if (res.writableEnded || res.destroyed) return;
    // An empty ExportTraceServiceResponse: no body in protobuf, {} in JSON.
    const json = [...contentTypes].some((t) => t.startsWith('application/json'));
    res
      .writeHead(200, { 'content-type': json ? 'application/json' : 'application/x-protobuf' })
      .end(json ? '{}' : '');
  };
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    requests++;
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      if (req.method !== 'POST' || req.url !== '/v1/traces') {
        res.writeHead(404).end();
        return;
      }
      const type = String(req.headers['content-type']);
      const body = Buffer.concat(chunks);
      if (type.startsWith('application/x-protobuf')) spans.push(...decodeOtlpProtobuf(body));
      else if (type.startsWith('application/json')) spans.push(...decodeOtlpJson(body.toString('utf8')));
      else {
        res.writeHead(415).end('this receiver decodes OTLP http/protobuf and http/json');
        return;
      }
      contentTypes.add(type);
      for (const wake of [...waiters]) wake();
      if (options.answerAfterMs === undefined || options.answerAfterMs === 0) {
        answer(res);
        return;
      }
      held.add(res);
      setTimeout(() => answer(res), options.answerAfterMs).unref();
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/v1/traces`,
    spans,
    get requests() {
      return requests;
    },
    contentTypes,
    waitFor(match, count = 1) {
      return new Promise((resolve) => {
        const check = () => {
          const found = spans.filter(match);
          if (found.length < count) return;
          waiters.delete(check);
          resolve(found);
        };
        waiters.add(check);
        check();
      });
    },
    async close() {
      for (const res of held) res.destroy();
      server.closeAllConnections();
      server.close();
      await once(server, 'close');
    },
  };
}
