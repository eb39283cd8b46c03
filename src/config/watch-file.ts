// Notices when a config file changes: edits in place, editors' rename-and-replace, and the symlink swap
// by which Kubernetes updates a mounted ConfigMap (`..data` re-pointed in the file's folder).
import { createHash } from 'node:crypto';
import { type FSWatcher, watch } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { basename, dirname } from 'node:path';

export interface FileWatch {
  close(): void;
}

async function contentHash(path: string): Promise<string | undefined> {
  try {
    return createHash('sha256')
      .update(await readFile(path))
      .digest('hex');
  } catch {
    return undefined;
  }
}

/**
 * Calls onChange when the file's content changes. The folder is watched (a swapped symlink or a replaced
 * file is a new inode, which a watch on the file itself would miss), and the content is polled as a
 * fallback for filesystems without notifications. Content, not timestamps, decides.
 */
export function watchFile(
  path: string,
  onChange: () => void,
  options: { pollMs?: number; debounceMs?: number } = {},
): FileWatch {
  const pollMs = options.pollMs ?? 1000;
  const debounceMs = options.debounceMs ?? 100;
  let last: string | undefined;
  let timer: NodeJS.Timeout | undefined;
  let closed = false;
  void contentHash(path).then((hash) => {
    last = hash;
  });

  const check = async () => {
    const hash = await contentHash(path);
    if (closed || hash === undefined || hash === last) return;
    last = hash;
    onChange();
  };
  const soon = () => {
    if (timer !== undefined) clearTimeout(timer);
    timer = setTimeout(() => void check(), debounceMs);
  };

  let watcher: FSWatcher | undefined;
  const name = basename(path);
  try {
    watcher = watch(dirname(path), (_event, file) => {
      if (file === null || file === name || file.startsWith('..')) soon();
    });
    watcher.on('error', () => watcher?.close());
  } catch {
    watcher = undefined;
  }
  const poll = setInterval(() => void check(), pollMs);
  poll.unref();

  return {
    close() {
      closed = true;
      watcher?.close();
      clearInterval(poll);
      if (timer !== undefined) clearTimeout(timer);
    },
  };
}
