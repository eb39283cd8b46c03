// Preload (`node --require`) for the conformance CLI: its scenario servers must bind 127.0.0.1 only.
// test/support/bind-loopback.cjs turns their `listen(0)` into `listen(0, '127.0.0.1')`, but a listen with
// a host resolves it with dns.lookup first, which answers on a later tick, and the suite reads
// `server.address().port` right after listen() returns. So dns.lookup answers IP literals at once
// (there is nothing to resolve), and the bind happens inside listen() as it did without a host. Node 20
// asks for one address; Node 24 asks with `{ all: true }` and gets the list form.
'use strict';
const dns = require('node:dns');
const net = require('node:net');

const originalLookup = dns.lookup;

dns.lookup = function lookupIpLiteralsAtOnce(...args) {
  const [hostname, options, callback] = args;
  const done = typeof options === 'function' ? options : callback;
  const wantsAll = options !== null && typeof options === 'object' && options.all === true;
  const family = typeof hostname === 'string' ? net.isIP(hostname) : 0;
  if (family !== 0 && typeof done === 'function') {
    if (wantsAll) done(null, [{ address: hostname, family }]);
    else done(null, hostname, family);
    return {};
  }
  return originalLookup.apply(this, args);
};

require('../test/support/bind-loopback.cjs');
