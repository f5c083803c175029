export * from './types';
export { defaultConfig } from './defaults';
export { ConfigError, loadConfigFile, parseConfig } from './load';
