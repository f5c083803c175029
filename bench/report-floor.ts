/**
 * `npm run bench:report-floor`: how far the reporter's CPU per drain is above the least a Node process
 * could spend on the same drains. Against the same stub API server and the same paced drains as
 * ./report.ts (10,000 pods, 100 drains/s for 10 s), interleaved round by round:
 *   - the reporter (`benchReporter`, as ./report.ts runs it);
 *   - the I/O floor (./lib/report-floor-client.ts): the watch read and split into lines, two Event
 *     creates per drain one after the other, nothing else;
 *   - the I/O floor with each watch event JSON.parse'd, as any JSON client must.
 * The floors run with the chart's Node settings, as the reporter does. CPU is user + system from
 * /proc over the drains (from the first drain written to the last pod Event received).
 *
 *   npm run bench:report-floor [-- --rounds 3]
 */
import { join } from 'node:path';
import { chartRuntimeEnv, measuredEnv } from './lib/chart-runtime';
import { readCpuSeconds, spawnTracked, stopProcess, waitForLine } from './lib/processes';
import { startReportApiStub } from './lib/report-api-stub';
import { table } from './lib/stats';
import { createBenchCertificates, type BenchCertificates } from './lib/tls';
import { benchReporter, paceDrains, QUICK_REPORTER_SETTINGS, type ReporterSettings } from './report';

/** CPU milliseconds per drain of the floor client, with or without parsing each watch event. */
export async function benchReportFloor(settings: ReporterSettings, certs: BenchCertificates, parse: boolean): Promise<number> {
  const stub = await startReportApiStub(certs, settings.pods);
  const token = (JSON.parse(stub.kubeconfig) as { users: { user: { token: string } }[] }).users[0]!.user.token;
  const client = spawnTracked(process.execPath, [join(__dirname, 'lib', 'report-floor-client.js'), JSON.stringify({ port: stub.port, token, ca: certs.ca, parse })], {
    env: measuredEnv(chartRuntimeEnv('report')),
  });
  try {
    await waitForLine(client, (line) => (line === 'started' ? true : undefined));
    const before = readCpuSeconds(client.pid!)!;
    const { sent } = await paceDrains(stub, settings);
    const after = readCpuSeconds(client.pid!)!;
    if (stub.eventsCreated < sent) throw new Error(`the floor client created ${stub.eventsCreated} pod Events for ${sent} drains`);
    return Math.round(((after - before) / sent) * 1000 * 100) / 100;
  } finally {
    await stopProcess(client);
    await stub.close();
  }
}

if (require.main === module) {
  const at = process.argv.indexOf('--rounds');
  const rounds = at === -1 ? 3 : Number(process.argv[at + 1]);
  if (!Number.isInteger(rounds) || rounds < 1) {
    process.stderr.write('bench failed: --rounds needs a whole number above 0\n');
    process.exit(2);
  }
  const certs = createBenchCertificates();
  const settings = QUICK_REPORTER_SETTINGS;
  const runs: { reporter: number[]; io: number[]; parsed: number[] } = { reporter: [], io: [], parsed: [] };
  void (async () => {
    try {
      for (let round = 1; round <= rounds; round++) {
        runs.reporter.push((await benchReporter(() => {}, settings, certs)).cpuPerDrainMs);
        runs.io.push(await benchReportFloor(settings, certs, false));
        runs.parsed.push(await benchReportFloor(settings, certs, true));
        process.stderr.write(`report-floor: round ${round} of ${rounds}: reporter ${runs.reporter.at(-1)}, I/O ${runs.io.at(-1)}, I/O and parse ${runs.parsed.at(-1)} ms per drain\n`);
      }
      const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
      const row = (name: string, values: number[]) => [name, values.map((value) => value.toFixed(2)).join(' '), `${median(values).toFixed(2)} ms`];
      process.stdout.write(
        `${table([
          [`CPU per drain (${settings.pods.toLocaleString('en-US')} pods, ${settings.drainsPerSecond} drains/s for ${settings.drainSeconds} s)`, 'each round', 'median'],
          row('drainguard report', runs.reporter),
          row('the I/O alone (watch read, two Event creates)', runs.io),
          row('the I/O, each watch event parsed', runs.parsed),
        ])}\n`,
      );
    } catch (error) {
      process.stderr.write(`bench failed: ${(error as Error).stack ?? String(error)}\n`);
      process.exitCode = 1;
    } finally {
      certs.remove();
    }
  })();
}
