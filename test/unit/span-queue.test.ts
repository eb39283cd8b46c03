// The span queue's bound in bytes (src/telemetry/bounded-processor.ts): real spans of the SDK's tracer, and an
// exporter that takes every batch and never answers, as a collector that hangs does.
import { type ReadableSpan, type SpanExporter, TracerProvider } from '@opentelemetry/sdk-trace';
import { describe, expect, it } from 'vitest';
import { BoundedBatchProcessor, type DropReason, spanBytes } from '../../src/telemetry/bounded-processor.js';

/** Takes each batch and never calls back. */
class HangingExporter implements SpanExporter {
  batches: ReadableSpan[][] = [];
  export(spans: ReadableSpan[]): void {
    this.batches.push(spans);
  }
  async shutdown(): Promise<void> {}
}

function setup(maxQueueBytes: number) {
  const drops: Record<string, number> = {};
  const exporter = new HangingExporter();
  const processor = new BoundedBatchProcessor(exporter, {
    maxQueueSize: 10_000,
    maxQueueBytes,
    maxExportBatchSize: 10,
    scheduledDelayMs: 60_000,
    exportTimeoutMs: 60_000,
    dropped: (count: number, reason: DropReason) => {
      drops[reason] = (drops[reason] ?? 0) + count;
    },
  });
  const tracer = new TracerProvider({ spanProcessors: [processor] }).getTracer('test');
  return { drops, exporter, processor, tracer };
}

describe('the span queue, bounded in bytes', () => {
  it("counts a span's strings: a span with a 100 KB attribute weighs more than 200 KB", () => {
    const { tracer } = setup(1 << 30);
    const span = tracer.startSpan('tools/call x', {
      attributes: { 'gen_ai.tool.name': 'x'.repeat(100_000) },
    });
    span.end();
    expect(spanBytes(span as unknown as ReadableSpan)).toBeGreaterThan(200_000);
  });

  it('holds at most maxQueueBytes, the batch in flight included; every span past it is counted as queue_bytes', () => {
    const maxQueueBytes = 1024 * 1024;
    const { drops, exporter, processor, tracer } = setup(maxQueueBytes);
    for (let i = 0; i < 100; i++) {
      tracer.startSpan(`big ${i}`, { attributes: { note: 'n'.repeat(50_000) } }).end();
      expect(processor.queuedBytes).toBeLessThanOrEqual(maxQueueBytes);
    }
    const held = processor.queued + exporter.batches.flat().length;
    expect(held).toBeGreaterThan(0);
    expect(held + (drops.queue_bytes ?? 0)).toBe(100);
    expect(drops.queue_bytes).toBeGreaterThan(80);
  });

  it('small spans fill it by count long before bytes', () => {
    const { drops, processor, tracer } = setup(8 * 1024 * 1024);
    for (let i = 0; i < 500; i++) tracer.startSpan(`tools/call t${i}`, { attributes: { id: i } }).end();
    expect(drops.queue_bytes).toBeUndefined();
    expect(processor.queuedBytes).toBeLessThan(500 * 1024);
  });
});
