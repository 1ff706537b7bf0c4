/**
 * The doctor's line over a serial port it opens itself at one setting (`shadowgate doctor --port`): one
 * RTU request at a time, its answer collected until it is whole or the deadline passes (collect.ts judges
 * the bytes: echo, late frames from other units, garbage). The CLI opens one per setting tried, and so does a
 * running gateway's settings search on a bus whose line it took (runtime/doctor-service.ts); a run at the bus's
 * own settings goes through the bus's owner instead.
 */
import { SerialPort } from 'serialport';
import { MAX_FRAME, rtuFrame } from '../../../protocol/modbus/frame.js';
import { judgeAnswer } from './collect.js';
import { charBits } from './settings.js';
import { answerGapMs } from '../../../protocol/modbus/wire-cost.js';
import type { DoctorIo, Exchange, LineSettings } from '../../../protocol/modbus/doctor-types.js';

export interface SerialDoctorIo extends DoctorIo {
  close(): Promise<void>;
}

/** Opens `path` at `settings`; rejects with the port's own error (a lock held by the gateway says "Cannot lock port"). */
export async function openSerialDoctorIo(path: string, settings: LineSettings): Promise<SerialDoctorIo> {
  const port = new SerialPort({
    path, baudRate: settings.baud_rate, parity: settings.parity, stopBits: settings.stop_bits, dataBits: settings.data_bits, autoOpen: false,
  });
  await new Promise<void>((resolve, reject) => port.open((err) => (err ? reject(err) : resolve())));
  // Room for an echo and the longest answer, and what a wrong baud makes of them (up to 12 times as many).
  const rx = new Uint8Array(16 * MAX_FRAME);
  let rxEnd = 0;
  let onBytes: (() => void) | null = null;
  let sent = 0;
  let echoed = false;
  const late = new Set<number>();
  const charMs = (charBits(settings) * 1000) / settings.baud_rate;
  const stepMs = Math.max(5, Math.ceil(4 * charMs));
  const maxExtendMs = Math.ceil(MAX_FRAME * charMs) + 50;
  const gapMs = answerGapMs(settings.baud_rate);
  let lastByteAt = -Infinity;
  port.on('data', (chunk: Buffer) => {
    lastByteAt = performance.now();
    const n = Math.min(chunk.length, rx.length - rxEnd);
    rx.set(chunk.subarray(0, n), rxEnd);
    rxEnd += n;
    onBytes?.();
  });
  port.on('error', () => {}); // a write's own callback reports it; a read error ends in silence

  const ask = (unit: number, pdu: Uint8Array, timeoutMs: number): Promise<Exchange> => new Promise<Exchange>((resolve, reject) => {
    const frame = rtuFrame(unit, pdu);
    rxEnd = 0; // what came before this request (a late answer already given up on) is not its answer
    let timer: NodeJS.Timeout | undefined;
    const settle = (final: boolean): void => {
      const judged = judgeAnswer(frame, rx, rxEnd, final);
      if (!judged.exchange) return;
      clearTimeout(timer);
      onBytes = null;
      if (judged.echo) echoed = true;
      for (const u of judged.late) late.add(u);
      resolve(judged.exchange);
    };
    // A frame still coming at the deadline (its first bytes in and more still arriving: a unit answering right at
    // its limit, or a busy machine handing bytes over late) is waited for, a few characters at a time, up to a
    // longest frame's wire time more: cut at the deadline, it read as garbage in this ask and in the next one, and
    // a unit that answered was never found. A frame ends after the gateway's frame gap of silence (answerGapMs),
    // so bytes that stopped coming, like a silent line or bytes that make no frame, end at the deadline as before:
    // a scan of 247 units never waits longer on noise.
    let extended = 0;
    const deadline = (): void => {
      const flowing = performance.now() - lastByteAt < gapMs;
      if (flowing && extended < maxExtendMs && judgeAnswer(frame, rx, rxEnd, true).incomplete) {
        extended += stepMs;
        timer = setTimeout(deadline, stepMs);
        return;
      }
      settle(true);
    };
    onBytes = () => settle(false);
    sent += frame.length;
    port.write(Buffer.from(frame), (err) => {
      if (!err) return;
      clearTimeout(timer);
      onBytes = null;
      reject(err);
    });
    timer = setTimeout(deadline, timeoutMs);
  });

  return {
    ask,
    sentBytes: () => sent,
    echo: () => echoed,
    lateUnits: () => [...late].sort((a, b) => a - b),
    close: () => new Promise<void>((resolve) => {
      onBytes = null;
      if (!port.isOpen) return resolve();
      port.close(() => resolve());
    }),
  };
}
