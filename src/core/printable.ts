// The printable form of a text that someone else chose (a server's name, a tool name, an error message, a
// line of a child's stderr): what a terminal or a log line may show without obeying it.

/**
 * Every C0 control (U+0000-U+001F, TAB, LF and CR included), DEL (U+007F), every C1 control (U+0080-U+009F),
 * the line and paragraph separators (U+2028, U+2029: some readers end a line there) and lone surrogates (no
 * UTF-8 encoding: an exporter or a terminal would show a replacement character instead).
 */
const UNPRINTABLE = /[\p{Cc}\u2028\u2029]|\p{Cs}/u;
const UNPRINTABLE_ALL = /[\p{Cc}\u2028\u2029]|\p{Cs}/gu;

const escaped = (control: string): string => `\\u${control.charCodeAt(0).toString(16).padStart(4, '0')}`;

/**
 * `text` with each control character written as its `\u001b`-style escape, as visible text: ESC becomes the
 * six characters `\u001b`, CR `\u000d`, LF `\u000a`, the C1 CSI `\u009b`, DEL `\u007f`, a lone surrogate `\ud800`. Nothing else is
 * touched (a backslash stays one backslash), so the form is for reading, not for decoding back. A terminal
 * shown it gets no escape sequence (no title, no clear, no hidden link) and no line break or carriage return
 * of the text's own, so no line of it can pose as the printer's. The escape is JSON's own spelling: inside a
 * JSON string it stands for the same character to a JSON parser (printableJsonLines relies on it).
 */
export function printable(text: string): string {
  return UNPRINTABLE.test(text) ? text.replace(UNPRINTABLE_ALL, escaped) : text;
}

/** Whether printable would leave `text` as it is. */
export function isPrintable(text: string): boolean {
  return !UNPRINTABLE.test(text);
}

/**
 * A JSON text from JSON.stringify, with DEL and the C1 controls it leaves raw escaped. JSON.stringify
 * escapes every C0 control inside strings, so the only raw line breaks are its own layout, kept: each line
 * goes through printable, and the output parses to the same value.
 */
export function printableJsonLines(json: string): string {
  return json.split('\n').map(printable).join('\n');
}
