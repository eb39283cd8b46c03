// The test harness's child handle: once `exited` resolves, stdout() and stderr() hold everything written
// to the process's pipes. Node's 'exit' can come before the last of it is read (the interop matrix once
// read an Inspector CLI's error that way and saw nothing); here a helper that still holds the pipes and
// writes after the process has exited makes that order certain.
import { describe, expect, it } from 'vitest';
import { spawnNode } from '../support/processes.js';

const EXIT_BEFORE_THE_LAST_WRITE = `
const { spawn } = require('node:child_process');
spawn(process.execPath, ['-e', "setTimeout(() => process.stderr.write('written last'), 300)"], {
  stdio: ['ignore', 'inherit', 'inherit'],
});
process.stderr.write('written first ');
process.exit(1);
`;

describe('spawnNode', () => {
  it('has all the output written to the pipes when exited resolves, not only what came before the exit', async () => {
    const child = spawnNode(['-e', EXIT_BEFORE_THE_LAST_WRITE]);
    const exit = await child.exited;
    expect(exit.code).toBe(1);
    expect(child.stderr()).toBe('written first written last');
  });
});
