/**
 * How long `--tls-mode self`'s certificates live by default. Its own module, free of imports: the
 * CLI's command table reads these for `serve --help` without loading the certificate code.
 */
const DAY_MS = 24 * 60 * 60 * 1000;

/** The CA and the serving certificate are valid a year. */
export const DEFAULT_VALIDITY_MS = 365 * DAY_MS;
/** Both are issued anew 30 days before either expires. */
export const DEFAULT_RENEW_BEFORE_MS = 30 * DAY_MS;
