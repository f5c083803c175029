/**
 * Paths the drain command carries: the admin unix socket and the termination message file, both
 * plain absolute paths that need no quoting and cannot climb out with "..".
 * Part of the drain contract (index.ts): imports nothing outside this folder and nothing from Node.
 */
/** sun_path holds 108 bytes including the terminating NUL. */
export const MAX_UNIX_SOCKET_PATH_BYTES = 107;
/**
 * One or more `/segment`s, each of letters, digits, ".", "_" or "-": no empty segment, no trailing
 * slash. The slash is outside the class, so the match is linear.
 */
const SEGMENTED_PATH = /^(\/[A-Za-z0-9._-]+)+$/;
/** A "." or ".." segment. */
const DOT_SEGMENT = /\/\.\.?(\/|$)/;

/** Why `path` is not an absolute path of plain segments of at most `maxBytes`, or undefined. */
function plainPathProblem(path: string, maxBytes: number, what: string): string | undefined {
  // Checked before the segments, so an enormous value costs no more than this comparison.
  if (path.length > maxBytes) return `${what} is longer than ${maxBytes} bytes`;
  if (!SEGMENTED_PATH.test(path) || DOT_SEGMENT.test(path)) {
    return 'each path segment must be letters, digits, ".", "_" or "-", and not "." or ".."';
  }
  return undefined;
}

export function unixSocketPathProblem(path: string): string | undefined {
  if (!path.startsWith('/')) return 'a unix socket needs an absolute path, e.g. unix:/admin/admin.sock';
  return plainPathProblem(path, MAX_UNIX_SOCKET_PATH_BYTES, 'the socket path');
}

// ── The termination message file ───────────────────────────────────────────────────────────────

/**
 * Where the drain leaves its record (src/drain-record.ts): the Envoy container's own
 * `terminationMessagePath`, which the kubelet bind-mounts over a file it created with mode 0666. The
 * same plain-segment rule as a unix socket path: nothing in it needs quoting, and no `..` can lead the
 * write elsewhere. Kubernetes' own default is /dev/termination-log.
 */
export const MAX_TERMINATION_MESSAGE_PATH_BYTES = 1024;
export const TERMINATION_MESSAGE_PATH_FORM =
  `an absolute path of letters, digits, ".", "_", "-" and "/" (no empty, "." or ".." segment), at most ${MAX_TERMINATION_MESSAGE_PATH_BYTES} bytes`;

/** Why `path` cannot be the drain's `--termination-message-path`, or undefined when it can. */
export function terminationMessagePathProblem(path: string): string | undefined {
  if (!path.startsWith('/')) return 'the termination message path must be absolute, e.g. /dev/termination-log';
  return plainPathProblem(path, MAX_TERMINATION_MESSAGE_PATH_BYTES, 'the termination message path');
}
