// Which peers are trusted proxies: a list of CIDR ranges (validated and normalized by the config schema),
// checked against a socket's remote address. Used for tenant headers and for forwarding headers alike.
import { BlockList, isIPv4, isIPv6 } from 'node:net';

export function trustedProxyList(cidrs: readonly string[]): BlockList {
  const list = new BlockList();
  for (const cidr of cidrs) {
    const [address = '', prefixText] = cidr.split('/');
    const type = isIPv6(address) ? 'ipv6' : 'ipv4';
    const prefix = prefixText === undefined ? (type === 'ipv6' ? 128 : 32) : Number(prefixText);
    list.addSubnet(address, prefix, type);
  }
  return list;
}

/** Checks a peer address, treating IPv4-mapped IPv6 (::ffff:a.b.c.d) as the IPv4 address. */
export function isTrustedPeer(list: BlockList, peer: string | undefined): boolean {
  if (peer === undefined) return false;
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(peer);
  const address = mapped?.[1] ?? peer;
  if (isIPv4(address)) return list.check(address, 'ipv4');
  if (isIPv6(address)) return list.check(address, 'ipv6');
  return false;
}
