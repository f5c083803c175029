export * from './types';
export { defaultConfig, DRAIN_SETTING_DEFAULTS } from './defaults';
export { ConfigError, loadConfigFile, parseConfig } from './load';
