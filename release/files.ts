/**
 * What the release's steps share: running a build tool, the SHA-256 of a file (remembered), and the
 * fixed time and ownership every archive and image layer carries, so the same inputs give the same bytes.
 */
import { spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { once } from 'node:events';
import { existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { REPO_ROOT } from '../test/support/repo';
import { CACHE } from './pinned-node';

/**
 * SHA-256 of a file, remembered with its size and modification time: an unchanged executable is not
 * read again (hashing the four large files on every `--if-changed` run costs seconds on a busy machine).
 */
const FILE_HASHES = join(CACHE, 'file-hashes.json');
type FileHashes = Record<string, { size: number; mtimeMs: number; sha256: string }>;
let fileHashes: FileHashes | undefined;
export function sha256File(file: string): string {
  fileHashes ??= existsSync(FILE_HASHES) ? (JSON.parse(readFileSync(FILE_HASHES, 'utf8')) as FileHashes) : {};
  const { size, mtimeMs } = statSync(file);
  const known = fileHashes[file];
  if (known && known.size === size && known.mtimeMs === mtimeMs) return known.sha256;
  const sha256 = createHash('sha256').update(readFileSync(file)).digest('hex');
  fileHashes[file] = { size, mtimeMs, sha256 };
  mkdirSync(CACHE, { recursive: true });
  writeFileSync(FILE_HASHES, JSON.stringify(fileHashes));
  return sha256;
}

/** Runs a build tool to its end; its stdout, or an error with everything it wrote. */
export function run(command: string[], options: { cwd?: string; env?: NodeJS.ProcessEnv } = {}): string {
  const [file, ...args] = command;
  const result = spawnSync(file!, args, { cwd: options.cwd ?? REPO_ROOT, encoding: 'utf8', ...(options.env ? { env: options.env } : {}) });
  if (result.error) throw result.error;
  if (result.status !== 0) throw new Error(`${command.join(' ')} exited ${result.status ?? result.signal}:\n${result.stdout}${result.stderr}`);
  return result.stdout;
}

/** Seconds since the epoch that every archive entry carries: SOURCE_DATE_EPOCH, else the last commit's time. */
export function sourceDateEpoch(): string {
  const given = process.env.SOURCE_DATE_EPOCH;
  if (given !== undefined) {
    if (!/^\d+$/.test(given)) throw new Error(`SOURCE_DATE_EPOCH must be a whole number of seconds, not ${JSON.stringify(given)}`);
    return given;
  }
  const commit = spawnSync('git', ['log', '-1', '--format=%ct'], { cwd: REPO_ROOT, encoding: 'utf8' });
  if (commit.status !== 0 || !/^\d+\n$/.test(commit.stdout)) throw new Error('no git commit to date the archives by: set SOURCE_DATE_EPOCH');
  return commit.stdout.trim();
}

/** tar flags for a reproducible archive or layer: owner 0, every entry's mtime the release's, ustar. */
export function reproducibleTarFlags(epoch: string): string[] {
  return ['--owner=0', '--group=0', '--numeric-owner', `--mtime=@${epoch}`, '--format=ustar'];
}

/**
 * A server process (a registry), started and waited for until its stderr says where it listens: the
 * first group of `listening`. `stop` kills it, and is called here too when it never gets that far.
 */
export async function startServer(command: string, args: readonly string[], listening: RegExp): Promise<{ address: string; stop: () => Promise<void> }> {
  const child = spawn(command, args, { stdio: ['ignore', 'ignore', 'pipe'] });
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGKILL');
      await once(child, 'close');
    }
  };
  try {
    const address = await new Promise<string>((resolve, reject) => {
      let log = '';
      child.stderr.on('data', (chunk: Buffer) => {
        log += chunk.toString();
        const found = listening.exec(log);
        if (found) resolve(found[1]!);
      });
      child.once('error', reject);
      child.once('close', (code) => reject(new Error(`${command} ${args.join(' ')} exited ${code}:\n${log}`)));
    });
    return { address, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}
