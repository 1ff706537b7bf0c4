/**
 * The doctor's line through a configured bus's owner (`POST /api/v1/buses/<id>/doctor`): every request is a
 * job of its own at the background priority, so the bus's polls go on between them at their rate (at the
 * read priority, each poll request waited behind one of the doctor's, up to a timeout for an id nobody owns:
 * a 200 ms poll of two requests fell to 60% of its rate), and each is a scan probe (BusIo.ask), not one of the
 * bus's timeouts or exceptions. The settings are the bus's own; each request waits at most the bus's timeout, as a scan does.
 */
import { GatewayError } from '../../../core/errors.js';
import { PRIORITY, type BusOwner } from '../bus-owner.js';
import type { BusDoctorIo, Exchange } from '../../../protocol/modbus/doctor-types.js';

/** Bytes on the wire around a PDU: RTU adds the unit and the CRC, Modbus TCP the MBAP header. */
const FRAMING = { rtu: 3, tcp: 7 } as const;


/** `echoes`: whether the bus's adapter hands back our bytes (the transport's, seen or configured). */
export function busDoctorIo(owner: BusOwner, link: 'rtu' | 'tcp', timeoutMs: number, echoes: () => boolean = () => false): BusDoctorIo {
  let sent = 0;
  let closed = false;
  return {
    async ask(unit: number, pdu: Uint8Array): Promise<Exchange> {
      if (closed) throw new GatewayError('DRIVER_ERROR', 'the bus doctor was stopped');
      return owner.enqueue(PRIORITY.background, (io) => {
        sent += pdu.length + FRAMING[link];
        return io.ask(unit, pdu, timeoutMs);
      });
    },
    sentBytes: () => sent,
    echo: echoes,
    close() {
      closed = true;
    },
  };
}
