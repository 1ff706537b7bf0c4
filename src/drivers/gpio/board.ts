/**
 * Board definitions (board/boards/*.json): which gpiochip carries the header, the header map, the
 * UARTs usable for RS-485 and reserved pins. Detection reads /proc/device-tree/model; the config's
 * `gateway.board` overrides it (copied by the gateway into the gpio bus as `board`).
 */
import { readFileSync, readdirSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { boardShapeProblems } from '../../config/validator.js';
import type { HeaderMap } from './header.js';

export interface BoardUart {
  /** Name as the overlays call it: uart0, uart3, … */
  name: string;
  /** Device node once enabled (a hint: extra PL011s are numbered in probe order on some kernels). */
  device: string;
  /** Other names the same UART is reached by (/dev/serial0, /dev/ttyS0, …). */
  aliases?: string[];
  tx: number;
  rx: number;
  rts?: number;
  cts?: number;
  /** Lines to add to config.txt to enable it on these pins. */
  config_txt: string[];
  notes?: string;
}

export interface BoardDefinition {
  /** Short id used by `gateway.board` ("rpi-4b"). */
  name: string;
  title: string;
  /** Prefixes of /proc/device-tree/model that identify the board; the longest match wins. */
  model_match: string[];
  soc: string;
  gpiochip: {
    /** Label of the gpiochip that carries the header lines (sysfs gpiochipN/label). */
    label: string;
    /** Lines on that chip (BCM numbers above it do not exist). */
    lines: number;
    /** Bases seen on real kernels, for the docs and troubleshooting; the driver always reads `base`. */
    known_bases?: Record<string, number>;
  };
  header: HeaderMap;
  uarts: BoardUart[];
  reserved: { pins: number[]; reason: string }[];
  notes?: string[];
}

/** board/boards/ in the source tree and in the installed package (src/… and dist/… are both 3 deep). */
export const DEFAULT_BOARDS_DIR = fileURLToPath(new URL('../../../board/boards/', import.meta.url));
export const DEFAULT_MODEL_PATH = '/proc/device-tree/model';

/**
 * Board files ship with the gateway and do not change while it runs: read once per directory, at start-up
 * (main.ts reads the default one before anything else), so a live config change (which runs the gpio check)
 * or a GPIO bus added live reads no file on the event loop; the device tree and gpiochips are read async.
 */
const loaded = new Map<string, BoardDefinition[]>();

/** Every board file in `dir`; a malformed file throws naming the file and its problems. */
export function loadBoards(dir: string = DEFAULT_BOARDS_DIR): BoardDefinition[] {
  let boards = loaded.get(dir);
  if (!boards) loaded.set(dir, (boards = readBoards(dir)));
  return boards;
}

function readBoards(dir: string): BoardDefinition[] {
  const files = readdirSync(dir).filter((f) => f.endsWith('.json')).sort();
  return files.map((file) => {
    const path = join(dir, file);
    let raw: unknown;
    try {
      raw = JSON.parse(readFileSync(path, 'utf8'));
    } catch (e) {
      throw new Error(`board file ${path}: ${(e as Error).message}`);
    }
    const problems = boardShapeProblems(raw); // src/config/board.schema.json is the one source of the shape
    if (problems.length > 0) throw new Error(`board file ${path}: ${problems.join('; ')}`);
    return raw as BoardDefinition;
  });
}

export function findBoard(boards: readonly BoardDefinition[], name: string): BoardDefinition | undefined {
  return boards.find((b) => b.name === name.trim().toLowerCase());
}

/** The board whose model_match is the longest prefix of `model` ("…3 Model B Plus" beats "…3 Model B"). */
export function matchBoardModel(boards: readonly BoardDefinition[], model: string): BoardDefinition | undefined {
  // The device-tree string is NUL-terminated.
  const text = model.replace(/\0/g, '').trim();
  let best: { board: BoardDefinition; length: number } | undefined;
  for (const board of boards) {
    for (const prefix of board.model_match) {
      if (text.startsWith(prefix) && prefix.length > (best?.length ?? -1)) best = { board, length: prefix.length };
    }
  }
  return best?.board;
}

export async function readDeviceTreeModel(path: string = DEFAULT_MODEL_PATH): Promise<string | undefined> {
  try {
    return (await readFile(path, 'utf8')).replace(/\0/g, '').trim();
  } catch {
    return undefined;
  }
}

export interface BoardChoice {
  board?: BoardDefinition;
  source: 'config' | 'device-tree' | 'none';
  /** The device-tree model text when read (for logs). */
  model?: string;
}

/** Override first, then the device tree; an unknown override name throws listing the known boards. */
export async function resolveBoard(opts: { override?: string; boards: readonly BoardDefinition[]; modelPath?: string }): Promise<BoardChoice> {
  if (opts.override !== undefined && opts.override !== '') {
    const board = findBoard(opts.boards, opts.override);
    if (!board) throw new Error(unknownBoardMessage(opts.override, opts.boards));
    return { board, source: 'config' };
  }
  const model = await readDeviceTreeModel(opts.modelPath);
  const board = model === undefined ? undefined : matchBoardModel(opts.boards, model);
  return board ? { board, source: 'device-tree', model } : { source: 'none', model };
}

export const unknownBoardMessage = (name: string, boards: readonly BoardDefinition[]): string =>
  `unknown board "${name}" (known: ${boards.map((b) => b.name).join(', ')})`;

/**
 * For the config loader: the board `gateway.board` names, or a `gateway.board: …` problem.
 * Without a name there is no board (the check then uses the common 40-pin header).
 */
export function resolveConfigBoard(name: string | undefined, dir?: string): { board?: BoardDefinition; problems: string[] } {
  if (name === undefined) return { problems: [] };
  try {
    const boards = loadBoards(dir);
    const board = findBoard(boards, name);
    return board ? { board, problems: [] } : { problems: [`gateway.board: ${unknownBoardMessage(name, boards)}`] };
  } catch (e) {
    return { problems: [`gateway.board: ${(e as Error).message}`] };
  }
}
