import { styleText } from 'node:util';

/**
 * Colour for people, plain text for pipes: output is coloured only when it goes to a terminal, and
 * never when NO_COLOR is set to anything but the empty string (https://no-color.org) or TERM is
 * `dumb`. The marks (√ × ℹ) and every word are the same either way, so `grep '^×'` works on both.
 * Node's styleText writes the escape codes; the decision is made here, once, from the stream and
 * the environment the caller passes in (so tests decide it too).
 */

/** What a piece of text is; each command colours only these. */
export type TextRole = 'pass' | 'fail' | 'info' | 'heading' | 'hint' | 'added' | 'removed' | 'hunk' | 'file' | 'bar';

export type Paint = (role: TextRole, text: string) => string;

type StyleFormat = Parameters<typeof styleText>[0];

const STYLES: Readonly<Record<TextRole, StyleFormat>> = {
  pass: 'green',
  fail: 'red',
  info: 'blue',
  heading: 'bold',
  hint: 'dim',
  added: 'green',
  removed: 'red',
  hunk: 'cyan',
  file: 'bold',
  bar: 'cyan',
};

export const plain: Paint = (_role, text) => text;

const coloured: Paint = (role, text) => (text === '' ? text : styleText(STYLES[role], text, { validateStream: false }));

export interface OutputTarget {
  isTTY?: boolean;
}

/** Whether to colour what goes to `stream`. */
export function wantsColour(stream: OutputTarget, env: NodeJS.ProcessEnv): boolean {
  if (env.NO_COLOR !== undefined && env.NO_COLOR !== '') return false;
  if (env.TERM === 'dumb') return false;
  return stream.isTTY === true;
}

export function paintFor(stream: OutputTarget, env: NodeJS.ProcessEnv): Paint {
  return wantsColour(stream, env) ? coloured : plain;
}
