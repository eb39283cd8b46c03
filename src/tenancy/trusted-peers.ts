// Which peers are trusted proxies: a list of CIDR ranges (validated and normalized by the config schema),
// checked against a socket's remote address. Used for tenant headers and for forwarding headers alike.
import { BlockList, isIPv4, isIPv6 } from 'node:net';

/** A set of trusted ranges. Checked per request, so answers are kept per peer address (peers are few). */
export class TrustedProxies {
  readonly #list = new BlockList();
  readonly #empty: boolean;
  readonly #answers = new Map<string, boolean>();

  constructor(cidrs: readonly string[]) {
    this.#empty = cidrs.length === 0;
    for (const cidr of cidrs) {
      const [address = '', prefixText] = cidr.split('/');
      const type = isIPv6(address) ? 'ipv6' : 'ipv4';
      const prefix = prefixText === undefined ? (type === 'ipv6' ? 128 : 32) : Number(prefixText);
      this.#list.addSubnet(address, prefix, type);
    }
  }

  /** Whether a peer address is in the ranges, treating IPv4-mapped IPv6 (::ffff:a.b.c.d) as the IPv4 address. */
  trusts(peer: string | undefined): boolean {
    if (peer === undefined || this.#empty) return false;
    let answer = this.#answers.get(peer);
    if (answer === undefined) {
      answer = this.#check(peer);
      // Peer addresses come from connections: bound the memory of answers, not the set of peers.
      if (this.#answers.size >= 4096) this.#answers.clear();
      this.#answers.set(peer, answer);
    }
    return answer;
  }

  #check(peer: string): boolean {
    const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(peer);
    const address = mapped?.[1] ?? peer;
    if (isIPv4(address)) return this.#list.check(address, 'ipv4');
    if (isIPv6(address)) return this.#list.check(address, 'ipv6');
    return false;
  }
}
