// A stdio MCP server's stderr, read line by line into the log with its session: each line cut at
// STDERR_LINE_BYTES, at most STDERR_LINES_PER_WINDOW lines per window, the rest counted and summed up, so a
// server that floods stderr costs neither memory nor the log.
import type { Logger } from 'pino';

export const STDERR_LINE_BYTES = 2048;
export const STDERR_LINES_PER_WINDOW = 100;
const WINDOW_MS = 10_000;

export class StderrLog {
  private line: Buffer[] = [];
  private lineBytes = 0;
  private cut = false;
  private windowStart = Date.now();
  private logged = 0;
  private suppressed = 0;

  constructor(
    private readonly log: Logger,
    private readonly fields: Record<string, unknown>,
  ) {}

  push(chunk: Buffer): void {
    let from = 0;
    while (from < chunk.length) {
      const lf = chunk.indexOf(0x0a, from);
      const end = lf < 0 ? chunk.length : lf;
      const room = STDERR_LINE_BYTES - this.lineBytes;
      if (end - from > room) this.cut = true;
      if (room > 0 && end > from) {
        const piece = chunk.subarray(from, Math.min(end, from + room));
        this.line.push(Buffer.from(piece));
        this.lineBytes += piece.length;
      }
      if (lf < 0) return;
      this.emit();
      from = lf + 1;
    }
  }

  /** The child is gone: its last line without LF, and what was not logged. */
  flush(): void {
    if (this.lineBytes > 0) this.emit();
    this.summarize();
  }

  private emit(): void {
    const text = Buffer.concat(this.line).toString('utf8').replace(/\r$/, '');
    const cut = this.cut;
    this.line = [];
    this.lineBytes = 0;
    this.cut = false;
    if (text.trim() === '') return;
    const now = Date.now();
    if (now - this.windowStart > WINDOW_MS) {
      this.summarize();
      this.windowStart = now;
      this.logged = 0;
    }
    if (this.logged >= STDERR_LINES_PER_WINDOW) {
      this.suppressed++;
      return;
    }
    this.logged++;
    this.log.info({ ...this.fields, stderr: text, ...(cut ? { cut: true } : {}) }, 'stdio MCP server stderr');
  }

  private summarize(): void {
    if (this.suppressed === 0) return;
    this.log.warn(
      { ...this.fields, suppressedLines: this.suppressed },
      'stdio MCP server stderr: lines not logged (more than 100 in 10 s)',
    );
    this.suppressed = 0;
  }
}
