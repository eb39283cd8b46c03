// Preload (`node --require`) for servers that call listen(PORT) with no host and so bind every
// interface: it makes such listen calls bind 127.0.0.1 instead. Calls that name a host are untouched.
'use strict';
const net = require('node:net');

const LOOPBACK = '127.0.0.1';
const originalListen = net.Server.prototype.listen;

function isPort(value) {
  return (
    typeof value === 'number' ||
    (typeof value === 'string' && value !== '' && Number.isInteger(Number(value)))
  );
}

net.Server.prototype.listen = function listenOnLoopback(...args) {
  const [first, second] = args;
  // listen() or listen(callback): an ephemeral port on every interface.
  if (first === undefined || typeof first === 'function') {
    return originalListen.call(this, 0, LOOPBACK, ...args);
  }
  if (isPort(first) && typeof second !== 'string') {
    return originalListen.call(this, first, LOOPBACK, ...args.slice(1));
  }
  if (
    first !== null &&
    typeof first === 'object' &&
    first.path === undefined &&
    first.host === undefined &&
    !('fd' in first) &&
    !('_handle' in first)
  ) {
    return originalListen.call(this, { ...first, host: LOOPBACK }, ...args.slice(1));
  }
  return originalListen.apply(this, args);
};
