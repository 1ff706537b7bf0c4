/**
 * A bound on the size of the MQTT packets a client sends. Aedes' parser (mqtt-packet) buffers a packet
 * whole, whatever its fixed header claims (up to 256 MB), before CONNECT too: one unauthenticated client
 * could fill the service's memory (MemoryMax) by announcing a huge packet and streaming it. This reads the
 * same bytes aedes reads — a 'data' listener beside aedes' 'readable' one sees each chunk aedes pulls and
 * does not change the flow — and calls `over` as soon as a fixed header announces more than `limit` bytes
 * or its length field is malformed (MQTT 3.1.1 §2.2.3: at most 4 bytes).
 */
import type { Duplex } from 'node:stream';

export function watchPacketSizes(stream: Duplex, limit: number, over: (announced: number | null) => void): void {
  let skip = 0;
  let inHeader = false;
  let length = 0;
  let factor = 1;
  let lengthBytes = 0;
  const onData = (chunk: Buffer): void => {
    let i = 0;
    while (i < chunk.length) {
      if (skip > 0) {
        const n = Math.min(skip, chunk.length - i);
        skip -= n;
        i += n;
        continue;
      }
      if (!inHeader) {
        // The packet type byte; the remaining length follows.
        inHeader = true;
        length = 0;
        factor = 1;
        lengthBytes = 0;
        i++;
        continue;
      }
      const b = chunk[i++]!;
      length += (b & 0x7f) * factor;
      factor *= 128;
      lengthBytes++;
      if (b & 0x80) {
        if (lengthBytes < 4) continue;
        stream.off('data', onData);
        over(null);
        return;
      }
      inHeader = false;
      if (length > limit) {
        stream.off('data', onData);
        over(length);
        return;
      }
      skip = length;
    }
  };
  stream.on('data', onData);
}
