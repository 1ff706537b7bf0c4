/**
 * What listening to a line says in words (traffic.ts counts, this phrases): a user reads these under the
 * traffic map, so each one names what was seen, what it usually means and what to check.
 */
import { exceptionText } from '../../../protocol/modbus/exceptions.js';

/** What the whole line showed, beyond each unit. */
export interface LineCounts {
  requests: number;
  responses: number;
  /** Answers heard without the request they answer (listening began in between, or the request was garbled). */
  orphanResponses: number;
  /** Bytes that were no frame (bad CRC, cut short, noise) and the runs of them. */
  garbledBytes: number;
  garbledRuns: number;
  /** Frames with more than t1.5 of silence inside. */
  t15Violations: number;
  /** Frames that began less than t3.5 after the frame before. */
  t35Violations: number;
}

export interface UnitOutcome { unit: number; answered: number; unanswered: number; exceptionCodes: number[] }

export interface HintTiming { baudRate: number; t35: number; t15: number }

const ms = (v: number): string => (v < 10 ? v.toFixed(2) : v.toFixed(0));

export function trafficHints(counts: LineCounts, units: UnitOutcome[], timing: HintTiming): string[] {
  const hints: string[] = [];
  if (counts.t35Violations > 0) {
    hints.push(`${counts.t35Violations} frame(s) began less than 3.5 characters (${ms(timing.t35)} ms at ${timing.baudRate} baud) after the frame before: `
      + 'a master or a slave on this line sends too early (t3.5); a device that keeps to the standard may take both frames for one and drop it.');
  }
  if (counts.t15Violations > 0) {
    hints.push(`${counts.t15Violations} frame(s) had a pause longer than 1.5 characters (${ms(timing.t15)} ms) inside: `
      + 'a sender that stalls mid-frame (a busy master, a USB adapter); a strict slave drops such frames (t1.5).');
  }
  if (counts.garbledRuns > 0) {
    hints.push(`${counts.garbledBytes} byte(s) in ${counts.garbledRuns} run(s) were no valid frame (bad CRC or cut short): `
      + 'two senders at once (another master colliding, a slave answering into the next request) or noise — check that one master polls at a time, termination and biasing.');
  }
  if (counts.orphanResponses > 0) {
    hints.push(`${counts.orphanResponses} answer(s) came without the request they answer (listening began in between, or a collision garbled the request).`);
  }
  for (const u of units) {
    if (u.unit === 0) continue;
    if (u.unanswered > 0 && u.answered === 0 && u.exceptionCodes.length === 0) {
      hints.push(`unit ${u.unit} never answered (${u.unanswered} request(s)): the other master asks for a unit that is not on this line, or it is off.`);
    } else if (u.unanswered > 0) {
      hints.push(`unit ${u.unit} left ${u.unanswered} request(s) unanswered: a slow or overloaded device, or collisions on the line.`);
    }
    if (u.exceptionCodes.length > 0) {
      const codes = u.exceptionCodes.sort((a, b) => a - b).map((c) => `${c} (${exceptionText(c)})`).join(', ');
      hints.push(`unit ${u.unit} answered with exception ${codes}: the other master asks for something this device does not have.`);
    }
  }
  return hints;
}
