/**
 * The platform the program runs on. Here: Node (tests, and the sources run directly). The build of the
 * static executable replaces this module with current.quickjs.ts (an esbuild alias in
 * build/build-executable.mjs), so Node's modules never enter that bundle.
 */
export { nodePlatform as platform } from './node';
