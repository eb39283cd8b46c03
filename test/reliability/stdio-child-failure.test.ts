// What the edge throws while routing a stdio child's output (issue 23, item 2: no exception raised while serving
// ends the process). The child's stdout listener serves every call it has at once, so no single exchange can
// take the failure: the child is ended, its end logged, and the process serves on. A real child process; the
// throw comes from the one callback of the child's that the upstream hands in.
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { parseConfigText } from '../../src/config/load.js';
import { createLogger } from '../../src/run.js';
import { StdioChild } from '../../src/upstream/stdio-child.js';
import { capturedLog } from '../support/start-edge.js';
import { stdioEdgeYaml } from '../support/stdio-edge.js';

/** A server that sends a notification no client asked for, then reads its input until it closes. */
const UNOWNED_NOTIFICATION = [
  process.execPath,
  '-e',
  `process.stdout.write('{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"x"}}\\n');
   process.stdin.resume();`,
];

describe("a failure while routing a stdio child's output", () => {
  it('ends that child, is logged at error level with its stack, and never reaches the process', async () => {
    const { config } = parseConfigText(stdioEdgeYaml(UNOWNED_NOTIFICATION), 'child-failure.yaml', {});
    const spec = config.upstream.stdio;
    if (spec === undefined) throw new Error('the config has no upstream.stdio');
    const log = capturedLog();
    let exited: (() => void) | undefined;
    const exit = new Promise<void>((resolve) => {
      exited = resolve;
    });
    const child = new StdioChild({
      spec,
      env: { PATH: process.env.PATH ?? '' },
      log: createLogger('info', log.sink),
      sessionId: undefined, // a tenant's shared child: the notification names no caller, so it is undelivered
      holdBytes: 1024 * 1024,
      onExit: () => exited?.(),
      onSpawn: () => {},
      idWaitMs: 1000,
      streamWait: { ms: 1000, bytes: 1024 },
      onUndelivered: () => {
        throw new Error('planted: counting an undelivered message failed');
      },
    });
    const pid = child.pid;
    expect(pid).toBeGreaterThan(0);
    await Promise.race([
      exit,
      sleep(20_000).then(() => {
        throw new Error('the child was not ended after the failure');
      }),
    ]);
    expect(child.alive).toBe(false);
    const failure = log.records().find((r) => r.level === 50);
    expect(failure).toMatchObject({
      pid,
      msg: expect.stringContaining("failed routing an MCP server's output"),
    });
    expect(JSON.stringify(failure)).toContain('planted: counting an undelivered message failed');
  }, 30_000);
});
