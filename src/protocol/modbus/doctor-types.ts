/**
 * What the bus doctor reports (`shadowgate doctor`, `POST /api/v1/buses/<id>/doctor`): the line's settings,
 * every unit that answered with its ranked model candidates, the traffic of other masters heard while
 * listening, and hints in words. The field names are a contract: other tools and tests read them.
 */

/** One serial setting of a line, in the config's words (a modbus-rtu bus's fields). */
export interface LineSettings {
  baud_rate: number;
  parity: 'none' | 'even' | 'odd';
  data_bits: 8;
  stop_bits: 1 | 2;
}

export interface DoctorLine extends LineSettings {
  /** The adapter hands back what we send (a converter without echo suppression); the bus option `echo`. */
  echo: boolean;
}

export interface ModelCandidate {
  /** A library model's name (config/models.ts). */
  model: string;
  /** 0..1: the share of identity and plausibility checks passed. */
  score: number;
  /** Why, in words: which identity register or points matched or failed. */
  why: string;
}

export interface DoctorUnit {
  unit: number;
  /** What proved the unit is there: a data answer, or a Modbus exception (the unit exists, the register not). */
  answers: 'data' | 'exception';
  /** Best first; empty when no library model fits. */
  candidates: ModelCandidate[];
}

/** A register or bit range a master asked one unit for, with the function code. */
export interface TrafficRange {
  fc: number;
  from: number;
  /** Inclusive. */
  to: number;
  /** Requests per minute over the listening window. */
  per_minute: number;
}

/** What listening heard for one unit, asked by another master. */
export interface TrafficUnit {
  unit: number;
  functions: number[];
  ranges: TrafficRange[];
  /** Requests that got an answer / an exception / nothing within the listening window. */
  answered: number;
  exceptions: number;
  unanswered: number;
  /**
   * The last register values seen in answers, by function code and address, `"<fc>:<address>"` (`"3:100"`,
   * `"4:100"`: a unit's holding and input register 100 are two registers) — FC 3/4: words; FC 1/2: 0/1.
   */
  last_values: Record<string, number>;
}

export interface DoctorReport {
  /** null: no setting tried gave a valid answer (or a valid frame heard when listening). */
  line: DoctorLine | null;
  units: DoctorUnit[];
  traffic: TrafficUnit[];
  /** Sentences for a user: wrong baud or A/B swapped, an echoing adapter, t3.5 violations, collisions. */
  hints: string[];
  /** Bytes the gateway sent (0 when only listening). */
  sent_bytes: number;
  elapsed_ms: number;
}

/** Progress for a CLI line or a console bar. */
export interface DoctorProgress {
  phase: 'settings' | 'units' | 'identity' | 'listen';
  /** 0..1 within the phase. */
  done: number;
  note: string;
}

/** One request's outcome on the line, as the doctor sees it. */
export type Exchange =
  /** A valid frame (CRC right, from the unit asked): its PDU (function code first). */
  | { kind: 'answer'; pdu: Uint8Array }
  /** A valid exception frame: the unit is there. */
  | { kind: 'exception'; code: number }
  /** Bytes came back but no valid frame: wrong baud or parity, A/B swapped, or a collision. */
  | { kind: 'garbage'; bytes: number }
  | { kind: 'silence' };

/**
 * How the doctor talks to a line: an ad-hoc serial port it owns (the CLI, settings tried one by one), or a
 * configured bus through its owner's queue (REST; the polls keep their share, the settings are the bus's).
 */
export interface DoctorIo {
  /** One request PDU (function code first) to `unit`; waits at most `timeoutMs` for its answer. Never throws for what the line did. */
  ask(unit: number, pdu: Uint8Array, timeoutMs: number): Promise<Exchange>;
  /** Bytes sent so far. */
  sentBytes(): number;
  /** The adapter handed our own request back before the answer (stripped from what ask returns). Absent: not known. */
  echo?(): boolean;
  /**
   * Units whose valid frame came while another unit was asked: an answer later than its own ask waited
   * (a slow device at a short scan timeout). Absent: not known.
   */
  lateUnits?(): number[];
}

/** The doctor's options, the CLI's flags and the REST body alike (`auto` tries the common settings). */
export interface DoctorOptions {
  baud: 'auto' | number;
  parity: 'auto' | LineSettings['parity'];
  stopBits: 'auto' | 1 | 2;
  from: number;
  to: number;
  /** Seconds of passive listening (sends nothing); 0: no listening. */
  listenS: number;
}

/** A DoctorIo through a running bus's queue (drivers/modbus/doctor/bus-io.ts). */
export interface BusDoctorIo extends DoctorIo {
  /** Further requests fail at once (the run was stopped: the gateway stops, or the bus was removed). */
  close(): void;
}
