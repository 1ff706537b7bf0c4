/**
 * `shadowgate hash-password [--password X]`: prints a `password_hash` for `mqtt.users`
 * (format `scrypt$N$r$p$salt$key`, see src/export/auth.ts). Without `--password` the password is read
 * from stdin (first line), so it does not land in the shell history.
 */
import { hashPassword } from '../export/auth.js';

async function readStdinLine(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8').split(/\r?\n/)[0] ?? '';
}

/** Returns the exit status: 0 printed a hash, 2 usage error. */
export async function runHashPassword(
  args: string[],
  out: (line: string) => void,
  readPassword: () => Promise<string> = readStdinLine,
): Promise<number> {
  let password: string | undefined;
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    if (a === '--password') {
      password = args[++i];
      if (password === undefined) {
        out('error: --password needs a value');
        return 2;
      }
    } else if (a.startsWith('--password=')) {
      password = a.slice('--password='.length);
    } else if (a === '--help' || a === '-h') {
      out('usage: shadowgate hash-password [--password X]   (without --password: read from stdin)');
      out('prints scrypt$N$r$p$salt$key for mqtt.users[].password_hash');
      return 0;
    } else {
      out(`error: unknown argument ${a}`);
      return 2;
    }
  }
  password ??= await readPassword();
  if (password.length === 0) {
    out('error: empty password');
    return 2;
  }
  out(await hashPassword(password));
  return 0;
}
