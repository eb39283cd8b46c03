// A stdio server for the SDK client, spawned as the edge spawns one (stdio-process.ts: an argv, no shell,
// its own process group, ended by SIGTERM then SIGKILL; the environment of childEnvironment), its stdout
// framed into lines by the edge's line framer. Each line's bytes reach the tap before the SDK sees them;
// a line past --max-message-bytes is not held, and the SDK gets an error for its request instead.
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import type { Logger } from 'pino';
import type { StdioUpstreamConfig } from '../config/schema.js';
import { type LineEvent, LineFramer } from '../core/stdio-lines.js';
import { StdioProcess } from '../upstream/stdio-process.js';
import { childEnvironment } from '../upstream/stdio-upstream.js';
import { oversizedAnswerText, type RawTap } from './raw-tap.js';

const utf8 = new TextDecoder('utf-8');

export class EdgeStdioTransport implements Transport {
  onclose?: (() => void) | undefined;
  onerror?: ((error: Error) => void) | undefined;
  onmessage?: (<T extends JSONRPCMessage>(message: T) => void) | undefined;
  #process: StdioProcess | undefined;
  readonly #framer: LineFramer;
  /** Why the process ended, when it did. */
  ended: string | undefined;

  constructor(
    private readonly spec: StdioUpstreamConfig,
    private readonly tap: RawTap,
    private readonly log: Logger,
  ) {
    this.#framer = new LineFramer(tap.maxMessageBytes);
  }

  start(): Promise<void> {
    return new Promise((resolve, reject) => {
      this.#process = new StdioProcess({
        spec: this.spec,
        env: childEnvironment(this.spec, process.env),
        log: this.log,
        sessionId: undefined,
        onStdout: (chunk) => {
          for (const event of this.#framer.push(chunk)) this.#line(event);
        },
        onSpawn: () => resolve(),
        onEnd: (detail) => {
          this.ended = detail;
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
    await new Promise<void>((resolve, reject) => {
      stdin.write(`${JSON.stringify(message)}\n`, (error) => (error ? reject(error) : resolve()));
    });
  }

  async close(): Promise<void> {
    await this.#process?.stop('mcp-edge audit is done');
  }
}
