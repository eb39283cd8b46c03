// A stdio server for the SDK client, spawned as the edge spawns one (stdio-process.ts: an argv, no shell,
// its own process group, ended by SIGTERM then SIGKILL; the environment of childEnvironment), its stdout
// framed into lines by the edge's line framer. Each line's bytes reach the tap before the SDK sees them;
// a line past --max-message-bytes is not held, and the SDK gets an error for its request instead.

import { Writable } from 'node:stream';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { pino } from 'pino';
import type { StdioUpstreamConfig } from '../config/schema.js';
import { type LineEvent, LineFramer } from '../core/stdio-lines.js';
import { StdioProcess } from '../upstream/stdio-process.js';
import { childEnvironment } from '../upstream/stdio-upstream.js';
import { oversizedAnswerText, type RawTap } from './raw-tap.js';

const utf8 = new TextDecoder('utf-8');

/** The server's last stderr lines kept, to say why it would not start or initialize. */
const STDERR_KEPT = 20;

/**
 * The child's stderr lines from the edge's stdio log, kept as the last few lines instead of printed: audit's
 * output is its report, and these explain a server that could not be initialized. The edge's own lines about
 * the child (its start, its exit) are not the server's words: why it ended is in the audit's error already.
 */
function recentLog(kept: string[]): pino.Logger {
  const sink = new Writable({
    write(chunk: Buffer, _encoding, callback) {
      for (const line of chunk.toString('utf8').split('\n')) {
        if (line === '') continue;
        try {
          const record = JSON.parse(line) as { stderr?: unknown };
          if (record.stderr === undefined) continue;
          kept.push(String(record.stderr));
        } catch {
          kept.push(line);
        }
        if (kept.length > STDERR_KEPT) kept.shift();
      }
      callback();
    },
  });
  return pino({ level: 'info' }, sink);
}

/** How long a failed write waits for the process's end, to tell why it failed. */
const ENDING_WAIT_MS = 2000;

export class EdgeStdioTransport implements Transport {
  onclose?: (() => void) | undefined;
  onerror?: ((error: Error) => void) | undefined;
  onmessage?: (<T extends JSONRPCMessage>(message: T) => void) | undefined;
  #process: StdioProcess | undefined;
  readonly #framer: LineFramer;
  /** Why the process ended, when it did. */
  ended: string | undefined;
  /** Resolves when the process has ended (or never started). */
  readonly #end: Promise<void>;
  #endNow: () => void = () => {};
  /** The last lines the server wrote to stderr (and the edge's notes on its process). */
  readonly recentStderr: string[] = [];
  readonly #log = recentLog(this.recentStderr);

  constructor(
    private readonly spec: StdioUpstreamConfig,
    private readonly tap: RawTap,
  ) {
    this.#framer = new LineFramer(tap.maxMessageBytes);
    this.#end = new Promise((resolve) => {
      this.#endNow = resolve;
    });
  }

  start(): Promise<void> {
    return new Promise((resolve, reject) => {
      this.#process = new StdioProcess({
        spec: this.spec,
        env: childEnvironment(this.spec, process.env),
        log: this.#log,
        sessionId: undefined,
        onStdout: (chunk) => {
          for (const event of this.#framer.push(chunk)) this.#line(event);
        },
        onSpawn: () => resolve(),
        onEnd: (detail) => {
          this.ended = detail;
          this.#endNow();
          for (const event of this.#framer.end()) this.#line(event);
          reject(new Error(detail));
          this.onclose?.();
        },
      });
    });
  }

  #line(event: LineEvent): void {
    let text: string;
    if (event.kind === 'line') {
      this.tap.record(event.bytes);
      text = utf8.decode(event.bytes);
    } else if (event.kind === 'overflow-end') {
      const id = event.envelope.id;
      this.tap.recordOversized(id, event.totalBytes);
      if (id === undefined) return;
      text = oversizedAnswerText(id, event.totalBytes, this.tap.maxMessageBytes);
    } else {
      return;
    }
    let message: JSONRPCMessage;
    try {
      message = JSON.parse(text) as JSONRPCMessage;
    } catch (error) {
      this.onerror?.(new Error(`the server wrote a line that is not JSON: ${(error as Error).message}`));
      return;
    }
    this.onmessage?.(message);
  }

  async send(message: JSONRPCMessage): Promise<void> {
    const stdin = this.#process?.stdin;
    if (stdin === undefined) throw new Error(this.ended ?? 'the stdio server is not running');
    this.tap.noteSent(message);
    const written = await new Promise<Error | undefined>((resolve) => {
      stdin.write(`${JSON.stringify(message)}\n`, (error) => resolve(error ?? undefined));
    });
    if (written === undefined) return;
    // A pipe that broke is a process that is ending by itself: how it ended says more than EPIPE.
    await Promise.race([this.#end, new Promise((resolve) => setTimeout(resolve, ENDING_WAIT_MS).unref())]);
    throw this.ended !== undefined ? new Error(this.ended) : written;
  }

  async close(): Promise<void> {
    await this.#process?.stop('mcp-edge audit is done');
  }
}
