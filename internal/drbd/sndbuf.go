package drbd

// ProtocolASendBuffer is the send buffer, in bytes, the product gives a
// protocol A connection (sndbuf-size in the resource file; 0, DRBD's
// default, lets the kernel auto-tune it without a fixed bound). Under
// protocol A a write completes once it is on the local disk and in this
// buffer; a full buffer blocks the next write (on-congestion block, DRBD's
// default). So it bounds the acknowledged writes a crash of the primary can
// lose. 4 MiB carries about 40 MB/s on a link of 100 ms round trip.
const ProtocolASendBuffer = 4 << 20

// ProtocolALossBound is what an unplanned failover under protocol A may lose
// per replica at most: Linux doubles a socket's requested send buffer for
// its bookkeeping (socket(7), SO_SNDBUF), so up to twice
// ProtocolASendBuffer of data may sit in it.
const ProtocolALossBound = 2 * ProtocolASendBuffer
