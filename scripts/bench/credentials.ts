/**
 * Credentials in the bench: a request (a new connection each) to a host a credential is bound
 * to, whose TLS the proxy's forwarder terminates and opens again, beside one to an unbound host
 * tunnelled by the same proxy, from the same program. The servers are the tests' own
 * (test/docker/fixtures/testInternet.ts), and the secret a throwaway: nothing leaves the machine.
 */
import { randomBytes } from 'node:crypto';
import type Dockerode from 'dockerode';
import { parseBindings, standInsFor } from '../../src/core/credentials';
import { executeCode } from '../../src/core/executeCode';
import { DEFAULTS, type SandboxLimits } from '../../src/core/limits';
import { silentLogger } from '../../src/core/logger';
import { networkPolicy } from '../../src/core/network';
import { currentOwner } from '../../src/docker/container/labels';
import { DockerSandboxProvider } from '../../src/docker/pool/dockerSandboxProvider';
import { NAMES, startTestInternet } from '../../test/docker/fixtures/testInternet';
import { stat, type Stat } from './stats';

export interface CredentialsBench {
  results: Record<string, Stat>;
  ratios: Record<string, number>;
}

/** n requests to each host, alternating, each on a new connection; prints JSON (ms each). */
function program(caPem: string, n: number): string {
  return [
    'import json, os, ssl, tempfile, time, urllib.request',
    "ca = os.path.join(tempfile.gettempdir(), 'test-ca.pem')",
    `open(ca, 'w').write(${JSON.stringify(caPem)})`,
    // The bound host's certificate is the sandbox's own CA's (SSL_CERT_FILE); the other's is the test CA's.
    'bound_ctx, other_ctx = ssl.create_default_context(), ssl.create_default_context(cafile=ca)',
    'bound, unbound = [], []',
    `for _ in range(${n}):`,
    '    for url, ctx, into in ((' + `'https://${NAMES.api}/digest', bound_ctx, bound), ('https://${NAMES.web}/digest', other_ctx, unbound)):`,
    '        t = time.perf_counter()',
    '        urllib.request.urlopen(url, context=ctx, timeout=60).read()',
    '        into.append((time.perf_counter() - t) * 1000)',
    "print(json.dumps({'bound': bound, 'unbound': unbound}))",
  ].join('\n');
}

export async function benchCredentials(docker: Dockerode, image: string, n: number, version: string, limits: SandboxLimits): Promise<CredentialsBench> {
  const internet = await startTestInternet();
  const { policy } = networkPolicy([NAMES.web, NAMES.api], []);
  const { bindings } = parseBindings([{ secret: 'bench', hosts: [NAMES.api] }], 'bench');
  const secret = randomBytes(24).toString('hex');
  const credentials = { bindings, standIns: standInsFor(bindings), values: { generation: 'bench', read: () => Promise.resolve(secret) } };
  const network = { policy: policy!, testing: { ...internet.testing, upstreamCa: internet.caPem }, credentials };
  const provider = new DockerSandboxProvider({
    docker,
    owner: currentOwner('cli', version),
    spec: () => ({ image, limits, runtime: 'runc', preloadModules: [], network }),
    imageSettingHint: 'BENCH_IMAGE',
    log: silentLogger,
    idleMs: 0,
  });
  try {
    const runLimits = { timeoutMs: 600_000, outputBudgetBytes: 100_000, maxOutputBytes: DEFAULTS.maxOutputMb * 1024 * 1024 };
    const r = await executeCode(provider, silentLogger, { code: program(internet.caPem, n), sessionKey: `bench-credentials-${version}` }, runLimits);
    if (r.exitCode !== 0) throw new Error(`credentials bench: ${r.text.slice(0, 500)}`);
    const got = JSON.parse(r.stdout.head.toString().trim()) as { bound: number[]; unbound: number[] };
    const results = { 'credentials.request.bound': stat(got.bound), 'credentials.request.unbound': stat(got.unbound) };
    const ratios = {
      'a new HTTPS request to a bound host minus to an unbound one through the same proxy, ms (target <= 50)': results['credentials.request.bound'].median - results['credentials.request.unbound'].median,
    };
    return { results, ratios };
  } finally {
    await provider.dispose();
    await internet.stop();
  }
}
