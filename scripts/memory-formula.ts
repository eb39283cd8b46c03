// The memory formula the manifests and docs/operations.md ("Sizing memory") are sized from, and the figures
// measured for it: the one place they live. `npm run measure:memory` re-measures them (scripts/measure-memory.ts);
// test/reliability/memory-sizing.test.ts holds the formula to a measured run on every test run, and
// test/deploy checks the manifests' memory limits and the docs against it.
//
//   edge memory = resting RSS + headroom + largest message + factor x in-flight bytes
//
// - in-flight bytes: what the edge holds at once. Each message is held until it is known to fit: a response
//   up to its ceiling (JSON body or SSE event, in enforce and in observe mode alike; past the ceiling enforce
//   refuses it, observe streams the rest on), a stdio line up to the largest response ceiling of its tenant,
//   a request body up to request.maxBodyBytes. So in-flight bytes <= messages held at once x their ceiling.
// - largest message: the one buffer a message that came in several pieces is joined into to be read; it grows
//   to the largest message read and is kept.
// - headroom: what V8's heap and the allocator grow by once large messages flow, whatever their number, and
//   the buffers of messages already delivered that the garbage collector has not freed yet while more keep
//   coming (V8 collects them once enough external memory piles up).
// - factor: RSS per in-flight byte (the bytes themselves, their pieces' overhead, garbage not yet collected).

import { limitPolicyOf } from '../src/config/load.js';
import type { EdgeConfig } from '../src/config/schema.js';
import { maxRequestBodyCeiling, maxResponseCeiling } from '../src/core/limits.js';

export const MiB = 1024 * 1024;

/** The Node lines mcp-edge supports and is measured on. */
export type NodeLine = 20 | 24;

export function nodeLine(version = process.versions.node): NodeLine {
  return Number(version.split('.')[0]) >= 24 ? 24 : 20;
}

export interface EdgeMemoryFigures {
  /** The Node release measured. */
  measuredOn: string;
  /** RSS of the built CLI after start and a few small calls (largest of the runs). */
  restingMiB: number;
  headroomMiB: number;
  factor: number;
}

/**
 * Measured with `npm run measure:memory` (the built CLI in front of a scripted upstream, N results of S bytes
 * held at once, N x S from 1 x 8 MiB to 12 x 31 MiB, JSON and SSE, one burst and 4-8 rounds back to back):
 * the largest RSS growth seen, less the largest message, is within headroom + factor x N x S in every run.
 */
export const EDGE_MEMORY: Readonly<Record<NodeLine, EdgeMemoryFigures>> = {
  24: { measuredOn: 'v24.22.3', restingMiB: 124, headroomMiB: 96, factor: 1.1 },
  20: { measuredOn: 'v20.20.2', restingMiB: 112, headroomMiB: 80, factor: 1.1 },
};

/** The Node line the images run (deploy/docker/Dockerfile, deploy/stdio/Dockerfile: node:24-bookworm-slim). */
export const IMAGE_NODE_LINE: NodeLine = 24;

export interface InFlight {
  /** Bytes held at once (messages x their size, each at most its ceiling). */
  inFlightBytes: number;
  /** The largest message the edge reads (at most the largest ceiling). */
  largestMessageBytes: number;
  /** The edge's resting RSS; default: the measured figure for the Node line. */
  restingBytes?: number;
}

/** The edge's memory by the formula, in bytes. */
export function edgeMemoryBytes(node: NodeLine, load: InFlight): number {
  const figures = EDGE_MEMORY[node];
  const resting = load.restingBytes ?? figures.restingMiB * MiB;
  return resting + figures.headroomMiB * MiB + load.largestMessageBytes + figures.factor * load.inFlightBytes;
}

/** The edge's memory for `messages` held at once, each at `ceilingBytes`, in bytes. */
export function edgeMemoryForCeiling(node: NodeLine, messages: number, ceilingBytes: number): number {
  return edgeMemoryBytes(node, { inFlightBytes: messages * ceilingBytes, largestMessageBytes: ceilingBytes });
}

/**
 * One stdio child of deploy/stdio (@modelcontextprotocol/server-filesystem), by PSS (/proc/PID/smaps_rollup):
 * idle after initialize, and after answering read_text_file for a 5 MB file. Measured with
 * `npm run measure:memory` on Node 24.
 */
export const STDIO_CHILD_MEMORY = {
  server: '@modelcontextprotocol/server-filesystem 2026.8.31',
  measuredOn: 'v24.22.3',
  readFileBytes: 5_000_000,
  idlePssMiB: 49,
  afterReadPssMiB: 78,
} as const;

/**
 * The largest message a config lets the edge hold, over every tenant it names and the default one: a response
 * up to its largest ceiling, a request body up to its largest maxBodyBytes. Infinity when some path has none.
 */
export function largestHoldBytes(config: EdgeConfig): number {
  const policy = limitPolicyOf(config);
  const tenants = new Set([config.tenancy.default, ...Object.keys(config.tenants)]);
  let largest = 0;
  for (const tenant of tenants) {
    for (const bound of [maxResponseCeiling(policy, tenant), maxRequestBodyCeiling(policy, tenant)]) {
      largest = Math.max(largest, bound ?? Number.POSITIVE_INFINITY);
    }
  }
  return largest;
}

/** A stdio deployment: the edge holding one message per child at `ceilingBytes`, and `children` children by PSS after a large read. */
export function stdioMemoryBytes(node: NodeLine, children: number, ceilingBytes: number): number {
  return (
    edgeMemoryForCeiling(node, children, ceilingBytes) + children * STDIO_CHILD_MEMORY.afterReadPssMiB * MiB
  );
}

/** The Deployment annotation that states how many messages at the largest ceiling its memory limit is sized for. */
export const SIZED_FOR_ANNOTATION = 'mcp-edge/memory-sized-for-messages';
