/** `/server_info` as Envoy renders it (docs/design.md, "Envoy's admin API"): snake_case fields, pretty JSON. */
export type EnvoyState = 'LIVE' | 'DRAINING' | 'PRE_INITIALIZING' | 'INITIALIZING';

export interface SimulatedVersion {
  major: number;
  minor: number;
  patch: number;
}

export function parseVersion(text: string): SimulatedVersion {
  const match = /^(\d+)\.(\d+)\.(\d+)$/.exec(text);
  if (!match) throw new Error(`simulator: version must be x.y.z, got ${text}`);
  return { major: Number(match[1]), minor: Number(match[2]), patch: Number(match[3]) };
}

export function compareVersion(a: SimulatedVersion, b: SimulatedVersion): number {
  return a.major - b.major || a.minor - b.minor || a.patch - b.patch;
}

/** A fixed commit id: the first segment of Envoy's version string. */
const BUILD_SHA = '7ed31beba8cbcc0fc2b1e6d2f1a25e7a1a3ec7c1';

export interface ServerInfoInput {
  version: SimulatedVersion;
  state: EnvoyState;
  uptimeS: number;
  workers: number;
  drainTimeS: number;
  drainStrategy: 'Gradual' | 'Immediate';
}

export function buildServerInfo(input: ServerInfoInput): object {
  const { major, minor, patch } = input.version;
  const number = `${major}.${minor}.${patch}`;
  return {
    version: `${BUILD_SHA}/${number}/Clean/RELEASE/BoringSSL`,
    state: input.state,
    hot_restart_version: '11.104',
    command_line_options: {
      base_id: '0',
      use_dynamic_base_id: false,
      concurrency: input.workers,
      config_path: '/config/envoy.json',
      config_yaml: '',
      allow_unknown_static_fields: false,
      admin_address_path: '',
      local_address_ip_version: 'v4',
      log_level: 'info',
      component_log_level: '',
      log_format: '[%Y-%m-%d %T.%e][%t][%l][%n] [%g:%#] %v',
      log_path: '',
      service_cluster: '',
      service_node: '',
      service_zone: '',
      drain_strategy: input.drainStrategy,
      mode: 'Serve',
      disable_hot_restart: false,
      enable_mutex_tracing: false,
      restart_epoch: 0,
      cpuset_threads: false,
      disabled_extensions: [],
      file_flush_interval: '10s',
      drain_time: `${input.drainTimeS}s`,
      parent_shutdown_time: '900s',
    },
    node: {
      id: 'envoy-7d9f8c6b5-x2x9z',
      cluster: 'contour',
      user_agent_name: 'envoy',
      user_agent_build_version: {
        version: { major_number: major, minor_number: minor, patch: patch },
        metadata: { 'revision.sha': BUILD_SHA, 'revision.status': 'Clean', 'build.type': 'RELEASE', 'ssl.version': 'BoringSSL' },
      },
    },
    uptime_current_epoch: `${input.uptimeS}s`,
    uptime_all_epochs: `${input.uptimeS}s`,
  };
}
