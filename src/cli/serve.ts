/** Placeholder until the webhook lands: `drainguard serve` (owned by the webhook work). */
export async function runServe(_argv: string[]): Promise<number> {
  process.stderr.write('drainguard serve: not implemented yet\n');
  return 2;
}
