/**
 * A real Mosquitto broker on loopback as a child process (the upstream of the bridge tests), which can be
 * stopped and started again on the same port. Killed by PID; never left running.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';

export const MOSQUITTO = '/usr/sbin/mosquitto';
export const hasMosquitto = existsSync(MOSQUITTO);

/** A port that was free a moment ago (bound on 0 and released). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as AddressInfo;
      s.close(() => resolve(port));
    });
  });
}

const canConnect = (port: number): Promise<boolean> =>
  new Promise((resolve) => {
    const sock = net.connect(port, '127.0.0.1');
    sock.once('connect', () => {
      sock.destroy();
      resolve(true);
    });
    sock.once('error', () => resolve(false));
  });

export class Mosquitto {
  private child: ChildProcess | null = null;
  private stderr = '';
  readonly conf: string;

  /**
   * `dir`: a temp dir for the config file (and the database). `persist`: keep sessions and their queued
   * messages across a stop/start (saved on SIGTERM), so a `clean: false` subscriber misses nothing.
   */
  constructor(readonly port: number, dir: string, opts: { persist?: boolean } = {}) {
    this.conf = join(dir, 'mosquitto.conf');
    writeFileSync(this.conf, [
      `listener ${port} 127.0.0.1`,
      'allow_anonymous true',
      ...(opts.persist ? ['persistence true', `persistence_location ${dir}/`, 'autosave_interval 0'] : ['persistence false']),
      'log_dest stderr',
      'log_type error',
      'log_type warning',
      // The bench pushes bursts through it: no per-client cap on queued QoS 0 messages.
      'max_queued_messages 0',
      '',
    ].join('\n'));
  }

  get pid(): number | undefined {
    return this.child?.pid;
  }

  /** Starts the broker and resolves once it accepts TCP connections (rejects after `ms`). */
  async start(ms = 5000): Promise<void> {
    if (this.child) throw new Error('mosquitto already running');
    const child = spawn(MOSQUITTO, ['-c', this.conf], { stdio: ['ignore', 'ignore', 'pipe'] });
    this.child = child;
    this.stderr = '';
    child.stderr!.on('data', (d: Buffer) => (this.stderr += d.toString()));
    let exited = false;
    child.once('exit', () => (exited = true));
    const end = Date.now() + ms;
    while (!(await canConnect(this.port))) {
      if (exited) {
        this.child = null;
        throw new Error(`mosquitto exited at start: ${this.stderr.trim()}`);
      }
      if (Date.now() > end) {
        await this.stop();
        throw new Error(`mosquitto not listening on ${this.port} after ${ms} ms: ${this.stderr.trim()}`);
      }
      await new Promise((r) => setTimeout(r, 20));
    }
  }

  /** SIGTERM by PID, SIGKILL if it has not exited after 2 s; resolves once it is gone. */
  async stop(): Promise<void> {
    const child = this.child;
    this.child = null;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const gone = new Promise<void>((r) => child.once('exit', () => r()));
    process.kill(child.pid!, 'SIGTERM');
    const t = setTimeout(() => {
      try {
        process.kill(child.pid!, 'SIGKILL');
      } catch {
        /* already gone */
      }
    }, 2000);
    await gone;
    clearTimeout(t);
  }
}
