/**
 * Debian's docker-registry (the CNCF distribution registry), the OCI registry the release suites push
 * the chart and the drain image to and read them back from.
 */
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startServer } from '../../release/files';

/** docker-registry on a loopback port of its choosing, storing into `directory`; `stop` kills it. */
export async function startRegistry(directory: string): Promise<{ host: string; stop: () => Promise<void> }> {
  if (!existsSync('/usr/bin/docker-registry')) throw new Error('/usr/bin/docker-registry is missing: apt-get install docker-registry (.ci/run installs it)');
  const config = join(directory, 'registry.yml');
  const storage = join(directory, 'registry');
  writeFileSync(config, `version: 0.1\nlog: {level: info}\nstorage: {filesystem: {rootdirectory: ${storage}}}\nhttp: {addr: "127.0.0.1:0"}\n`);
  const { address, stop } = await startServer('/usr/bin/docker-registry', ['serve', config], /msg="listening on (127\.0\.0\.1:\d+)"/);
  return { host: address, stop };
}
