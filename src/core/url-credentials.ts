// Credentials written into a URL's userinfo (`http://user:password@host/mcp`): the one place they are
// taken apart. Wherever a URL is shown (logs, metric labels, check-config, error bodies) it goes through
// redactUrl; where it is used, the credentials travel as `Authorization: Basic`, never in the URL itself.

/** What stands in for a URL's userinfo wherever the URL is shown. */
export const REDACTED = '<redacted>';

function parsed(text: string): URL | undefined {
  return URL.canParse(text) ? new URL(text) : undefined;
}

function hasUserinfo(url: URL): boolean {
  return url.username !== '' || url.password !== '';
}

/** The URL as it may be shown: any userinfo (user name and password alike) replaced by `<redacted>`. */
export function redactUrl(text: string): string {
  const url = parsed(text);
  if (url === undefined || !hasUserinfo(url)) return text;
  url.username = '';
  url.password = '';
  return url.href.replace('//', `//${REDACTED}@`);
}

/** The URL without its userinfo: what the edge connects to. */
export function withoutCredentials(text: string): string {
  const url = parsed(text);
  if (url === undefined || !hasUserinfo(url)) return text;
  url.username = '';
  url.password = '';
  return url.href;
}

/** Why a URL's userinfo cannot be sent as Basic credentials, or undefined when it can (or there is none). */
export function basicCredentialProblem(text: string): string | undefined {
  const url = parsed(text);
  if (url === undefined || !hasUserinfo(url)) return undefined;
  try {
    const user = decodeURIComponent(url.username);
    decodeURIComponent(url.password);
    // RFC 7617 section 2: the user-id cannot contain a colon.
    if (user.includes(':'))
      return 'the user name in the URL contains ":", which Basic authentication cannot carry';
  } catch {
    return 'the user name or password in the URL is not valid percent-encoding, so it cannot be sent as Basic authentication';
  }
  return undefined;
}

/** `Basic base64(user:password)` from the URL's userinfo (percent-decoded, UTF-8), or undefined without one. */
export function basicAuthorization(text: string): string | undefined {
  const url = parsed(text);
  if (url === undefined || !hasUserinfo(url) || basicCredentialProblem(text) !== undefined) return undefined;
  const pair = `${decodeURIComponent(url.username)}:${decodeURIComponent(url.password)}`;
  return `Basic ${Buffer.from(pair, 'utf8').toString('base64')}`;
}
