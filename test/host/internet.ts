/**
 * The network suite's "internet" for the host tests (test/docker/fixtures/testInternet.ts), started
 * before the window and removed after it: `start FILE` writes what the window needs to FILE (the
 * proxy's test settings, the test CA, the names), `stop FILE` removes what `start` made.
 */
import * as fs from 'node:fs';
import { docker } from '../docker/helpers';
import { NAMES, startTestInternet } from '../docker/fixtures/testInternet';

export interface HostInternet {
  testing: { egressNetwork: string; reachable: string[]; hosts: Record<string, string>; upstreamCa: string };
  caPem: string;
  names: typeof NAMES;
  containers: string[];
}

async function main(): Promise<void> {
  const [command, file] = process.argv.slice(2);
  if (command === 'start' && file) {
    const internet = await startTestInternet();
    const info: HostInternet = { testing: { ...internet.testing, reachable: [...internet.testing.reachable], upstreamCa: internet.caPem }, caPem: internet.caPem, names: NAMES, containers: internet.containers };
    fs.writeFileSync(file, JSON.stringify(info, null, 2));
    return;
  }
  if (command === 'stop' && file) {
    const info = JSON.parse(fs.readFileSync(file, 'utf8')) as HostInternet;
    for (const c of info.containers) await docker.getContainer(c).remove({ force: true }).catch(() => {});
    await docker.getNetwork(info.testing.egressNetwork).remove().catch(() => {});
    return;
  }
  throw new Error('usage: internet.ts start|stop FILE');
}

main().then(
  () => process.exit(0),
  (e: unknown) => {
    console.error(e);
    process.exit(1);
  },
);
