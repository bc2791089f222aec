// `node --import ./test/support/signal-on-write.mjs`: the process sends
// itself the signal named in SIGNAL_ON_WRITE at its first write to stdout (a
// pipe, not a file, which the CLI writes without the stream). The thread is
// still busy then, so the signal waits in the event loop, as one that comes
// while the last chunk is scanned does.
const signal = process.env.SIGNAL_ON_WRITE;
const write = process.stdout.write;
let sent = false;
process.stdout.write = function (...args) {
  if (!sent && signal) {
    sent = true;
    process.kill(process.pid, signal);
  }
  return write.apply(this, args);
};
