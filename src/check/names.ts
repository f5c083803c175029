/**
 * The names drainguard's Helm chart gives its objects (charts/drainguard/templates/_helpers.tpl), so
 * `drainguard check` finds an installation from the release name and namespace alone.
 */

export interface InstallationNames {
  release: string;
  namespace: string;
  /** `drainguard.fullname`: the Deployment, the Service, and the prefix of the rest. */
  fullname: string;
  deployment: string;
  /** `drainguard.reporter.fullname`: the reporter's Deployment. */
  reporterDeployment: string;
  service: string;
  /** Cluster-scoped, so the namespace is part of it (`drainguard.webhookConfigName`). */
  webhookConfiguration: string;
  configMap: string;
  /** The self-mode Secret when the server's flags do not name one (`drainguard.tlsSecretName`). */
  tlsSecret: string;
}

/** The chart's own name (Chart.yaml `name`), which `nameOverride` would replace. */
const CHART_NAME = 'drainguard';

/** Helm's `trunc N | trimSuffix "-"`: at most N characters, then one trailing `-` removed. */
function truncate(text: string, max: number): string {
  const cut = text.slice(0, max);
  return cut.endsWith('-') ? cut.slice(0, -1) : cut;
}

/**
 * `fullnameOverride` wins; otherwise the release name when it already contains the chart name
 * (`drainguard`, `drainguard-prod`), else `<release>-drainguard`.
 */
export function chartNames(release: string, namespace: string, fullnameOverride?: string): InstallationNames {
  const fullname =
    fullnameOverride !== undefined && fullnameOverride !== ''
      ? truncate(fullnameOverride, 63)
      : release.includes(CHART_NAME)
        ? truncate(release, 63)
        : truncate(`${release}-${CHART_NAME}`, 63);
  return {
    release,
    namespace,
    fullname,
    deployment: fullname,
    reporterDeployment: truncate(`${fullname}-reporter`, 63),
    service: fullname,
    webhookConfiguration: truncate(`${fullname}-${namespace}`, 253),
    configMap: `${fullname}-config`,
    tlsSecret: `${fullname}-tls`,
  };
}
