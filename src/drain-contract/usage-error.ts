/**
 * A command line refused by the contract's parser: the drain program exits 2 with the message,
 * the drainguard CLI too.
 * Part of the drain contract (index.ts): imports nothing outside this folder and nothing from Node.
 */
/** A command line the program refuses (it exits 2 with the message). */
export class UsageError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UsageError';
  }
}
