// What a hostile peer puts in the text it chooses, to reach a terminal that shows it, and what a test checks
// in the bytes a command wrote to one.

/**
 * A window title (OSC 0 ... BEL), a screen clear (CSI 2 J), a hidden link (OSC 8 ... ST), a carriage return
 * that would overwrite the line with a fake verdict, an 8-bit CSI (C1 U+009B) and DEL.
 */
export const HOSTILE =
  '\u001b]0;pwned\u0007\u001b[2J\u001b]8;;https://evil.example/\u001b\\click\u001b]8;;\u001b\\\rAudit OK\u009b2K\u007f';

/** HOSTILE as printable (src/core/printable.ts) shows it. */
export const HOSTILE_SHOWN =
  '\\u001b]0;pwned\\u0007\\u001b[2J\\u001b]8;;https://evil.example/\\u001b\\click\\u001b]8;;\\u001b\\\\u000dAudit OK\\u009b2K\\u007f';

const strict = new TextDecoder('utf-8', { fatal: true });

/**
 * Each control character in `bytes` other than LF (C0, DEL, C1 as UTF-8 encodes it), as `U+001B at 12`.
 * Throws on bytes that are not UTF-8, so that a lone 8-bit control byte cannot pass as a replacement character.
 */
export function controlsIn(bytes: Uint8Array): string[] {
  const text = strict.decode(bytes);
  const found: string[] = [];
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if ((code < 0x20 && code !== 0x0a) || (code >= 0x7f && code <= 0x9f)) {
      found.push(`U+${code.toString(16).padStart(4, '0').toUpperCase()} at ${i}`);
    }
  }
  return found;
}
