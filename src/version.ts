/** drainguard's version, recorded in the status annotation and printed by `--version`. Kept equal to package.json by a test. */
export const VERSION = '0.1.0';
