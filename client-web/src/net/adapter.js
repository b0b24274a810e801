// Protocol adapter: proto/PROTOCOL.md messages <-> the client's internal messages
// and intents (README.md). The only file that knows the wire format.
// Placeholder until the protocol lands on main: it decodes nothing.
export function createAdapter({ roomId, kind, scene }) {
  return {
    onOpen() { return []; },
    decode() { return []; },
    encode() { return null; },
    ctx: { roomId, kind, scene },
  };
}
