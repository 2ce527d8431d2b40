/**
 * The network allow-list in the bench: a 50 MB HTTPS download and first requests (a new
 * connection each) through the sandbox's proxy, against the same program in a container on the
 * servers' own bridge network with no proxy, in the same run; and the idle proxy's memory. The
 * servers are the tests' own (test/docker/fixtures/testInternet.ts): nothing leaves the machine.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import type Dockerode from 'dockerode';
import { executeCode } from '../../src/core/executeCode';
import { DEFAULTS, type SandboxLimits } from '../../src/core/limits';
import { silentLogger } from '../../src/core/logger';
import { networkPolicy } from '../../src/core/network';
import { currentOwner } from '../../src/docker/container/labels';
import { egressNames } from '../../src/docker/network/egress';
import { DockerSandboxProvider } from '../../src/docker/pool/dockerSandboxProvider';
import { NAMES, startTestInternet } from '../../test/docker/fixtures/testInternet';
import { stat, type Stat } from './stats';

const execFileP = promisify(execFile);
const DOWNLOAD_BYTES = 50 * 1024 * 1024;

export interface NetworkBench {
  results: Record<string, Stat>;
  ratios: Record<string, number>;
  idleProxyMb: number;
}

/** The program both sides run: n first requests, then `downloads` downloads; prints JSON (ms each). */
function program(caPem: string, n: number, downloads: number): string {
  return [
    'import json, os, ssl, tempfile, time, urllib.request',
    "ca = os.path.join(tempfile.gettempdir(), 'ca.pem')",
    `open(ca, 'w').write(${JSON.stringify(caPem)})`,
    'ctx = ssl.create_default_context(cafile=ca)',
    'first, download = [], []',
    `for _ in range(${n}):`,
    '    t = time.perf_counter()',
    `    urllib.request.urlopen('https://${NAMES.web}/', context=ctx, timeout=60).read()`,
    '    first.append((time.perf_counter() - t) * 1000)',
    `for _ in range(${downloads}):`,
    '    t = time.perf_counter()',
    `    r = urllib.request.urlopen('https://${NAMES.web}/bytes/${DOWNLOAD_BYTES}', context=ctx, timeout=120)`,
    '    got = 0',
    '    while chunk := r.read(1 << 20):',
    '        got += len(chunk)',
    `    assert got == ${DOWNLOAD_BYTES}, got`,
    '    download.append((time.perf_counter() - t) * 1000)',
    "print(json.dumps({'first': first, 'download': download}))",
  ].join('\n');
}

export async function benchNetwork(docker: Dockerode, image: string, n: number, version: string, limits: SandboxLimits): Promise<NetworkBench> {
  const internet = await startTestInternet();
  const { policy } = networkPolicy([NAMES.web], []);
  const network = { policy: policy!, testing: internet.testing };
  const provider = new DockerSandboxProvider({
    docker,
    owner: currentOwner('cli', version),
    spec: () => ({ image, limits, runtime: 'runc', preloadModules: [], network }),
    imageSettingHint: 'BENCH_IMAGE',
    log: silentLogger,
    idleMs: 0,
  });
  const downloads = 5;
  try {
    const code = program(internet.caPem, n, downloads);
    const runLimits = { timeoutMs: 600_000, outputBudgetBytes: 100_000, maxOutputBytes: DEFAULTS.maxOutputMb * 1024 * 1024 };
    const viaProxy = await executeCode(provider, silentLogger, { code, sessionKey: `bench-network-${version}` }, runLimits);
    if (viaProxy.exitCode !== 0) throw new Error(`network bench through the proxy: ${viaProxy.text.slice(0, 500)}`);
    const proxied = JSON.parse(viaProxy.stdout.head.toString().trim()) as { first: number[]; download: number[] };
    const { stdout } = await execFileP(
      'docker',
      ['run', '--rm', '--network', internet.network, '--add-host', `${NAMES.web}:${internet.web}`, '--read-only', '--tmpfs', '/tmp', '--user', '65534', image, 'python3', '-c', code],
      { maxBuffer: 16 * 1024 * 1024 },
    );
    const direct = JSON.parse(stdout.trim().split('\n').pop()!) as { first: number[]; download: number[] };
    // Idle: the proxy after its calls, as `docker stats` counts a container (usage less page cache).
    const stats = (await docker.getContainer(egressNames(network).proxy).stats({ stream: false })) as { memory_stats: { usage?: number; stats?: { cache?: number; inactive_file?: number } } };
    const m = stats.memory_stats;
    const idleProxyMb = ((m.usage ?? 0) - (m.stats?.inactive_file ?? m.stats?.cache ?? 0)) / 2 ** 20;
    const results = {
      'network.firstRequest.proxy': stat(proxied.first),
      'network.firstRequest.direct': stat(direct.first),
      'network.download50MB.proxy': stat(proxied.download),
      'network.download50MB.direct': stat(direct.download),
    };
    const ratios = {
      '50 MB HTTPS download through the proxy / on a plain bridge, throughput (target >= 0.8)': results['network.download50MB.direct'].median / results['network.download50MB.proxy'].median,
      'first request through the proxy minus on a plain bridge, ms (target <= 50)': results['network.firstRequest.proxy'].median - results['network.firstRequest.direct'].median,
      'idle proxy memory, MB (target <= 32)': idleProxyMb,
    };
    return { results, ratios, idleProxyMb };
  } finally {
    await provider.dispose();
    await internet.stop();
  }
}
