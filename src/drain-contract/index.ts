/**
 * The drain contract: the command line of Envoy's preStop hook, as the webhook writes it and as
 * `envoy-shutdown drain` reads it (docs/design.md, "The preStop hook and its arguments"). Both sides
 * use this one folder, so they cannot disagree: one table of flags with their defaults, one formatter
 * (the webhook), one parser (the program), one admin-address check, one duration syntax, one
 * usage error, and the ranges both sides accept.
 *
 * It imports nothing, not even Node's modules: it is bundled into the drain program, which must run
 * as a static executable without Node's APIs.
 *
 * One file per concern: limits.ts, duration.ts, paths.ts, admin-address.ts, listener-pattern.ts,
 * usage-error.ts, flags.ts (the parser), drain-command.ts (the drain flag table) and envoy-releases.ts
 * (which admin calls each Envoy release gets). Each imports
 * nothing outside this folder and nothing from Node (test/unit/import-graph.test.ts).
 */
export * from './admin-address';
export * from './drain-command';
export * from './duration';
export * from './envoy-releases';
export * from './flags';
export * from './limits';
export * from './listener-pattern';
export * from './paths';
export * from './usage-error';
