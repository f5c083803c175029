/**
 * Runs the release's executables (and kubectl, helm, curl) as separate processes without blocking this
 * one, which serves the Kubernetes API double or the download server they talk to. Every process a test
 * starts is killed after it, even when the test failed.
 */
import { spawn, type ChildProcess } from 'node:child_process';

export interface Finished {
  status: number | null;
  stdout: string;
  stderr: string;
}

const running = new Set<ChildProcess>();
afterEach(() => {
  for (const child of running) child.kill('SIGKILL');
});

/**
 * `command` with `args`, an environment of exactly `env` (nothing inherited), and `input` on stdin, else
 * /dev/null (bash takes a socket on stdin for an ssh session and reads /etc/bash.bashrc).
 */
export function run(command: string, args: readonly string[], options: { env: NodeJS.ProcessEnv; cwd?: string; input?: string }): Promise<Finished> {
  const child = spawn(command, args, {
    env: options.env,
    stdio: [options.input === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'],
    ...(options.cwd === undefined ? {} : { cwd: options.cwd }),
  });
  running.add(child);
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  child.stdin?.end(options.input);
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (status) => {
      running.delete(child);
      resolve({ status, stdout, stderr });
    });
  });
}
