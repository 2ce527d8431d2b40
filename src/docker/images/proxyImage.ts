/**
 * The network proxy's image: Debian's squid (the OpenSSL build, which can peek at a TLS client
 * hello) on the Debian base the data image's debian route uses, built on the user's engine once
 * and reused until its recipe changes. Only sandboxes with an allow-list need it.
 */
import { createHash } from 'node:crypto';
import type Dockerode from 'dockerode';
import { ToolError, describeError } from '../../core/errors';
import type { Logger } from '../../core/logger';
import { LABEL, LABEL_SCHEMA } from '../container';
import { engineFailure, isEngineFailure } from '../engine';
import { BuildFailed, runBuild } from './build';
import type { BuildContext } from './dockerfile';
import { ImageBuildError } from './errors';
import { IMAGE_LABEL } from './imageLabels';
import { pruneImages } from './prune';
import { ROUTES } from './recipe';
import { PullCancelled, probeBase, startFailureText } from './routes';
import { shareBuild } from './sharedBuild';

export const PROXY_REPOSITORY = 'codeact-sandbox/proxy';
const PROXY_BUILD_TIMEOUT_MS = 10 * 60_000;
/** Where the proxy keeps what it makes at start (a tmpfs): its configuration and peek key. */
export const PROXY_RUN_DIR = '/run/codeact-proxy';
/** The environment variable the proxy's configuration is given in. */
export const PROXY_CONF_ENV = 'CODEACT_PROXY_CONF';

/**
 * The proxy's start: the key squid's ssl-bump port must have is made in memory at each start (it
 * only peeks and splices, so nothing is ever signed with it), the configuration written from the
 * environment, and squid run in the foreground as PID 1.
 */
const START_SCRIPT = [
  '#!/bin/sh',
  'set -eu',
  'umask 077',
  `openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 3650 -subj /CN=codeact-proxy -keyout ${PROXY_RUN_DIR}/peek.pem -out ${PROXY_RUN_DIR}/peek.pem 2>/dev/null`,
  `printf '%s\\n' "$${PROXY_CONF_ENV}" > ${PROXY_RUN_DIR}/squid.conf`,
  `exec squid -N -f ${PROXY_RUN_DIR}/squid.conf`,
  '',
].join('\n');

export function proxyImageContext(): BuildContext {
  const dockerfile = [
    '# CodeAct Sandbox network proxy: Debian\'s squid. Generated; its hash is the tag.',
    `FROM ${ROUTES.debian.base}`,
    'RUN apt-get update \\',
    ' && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends -o Dpkg::Use-Pty=0 squid-openssl openssl \\',
    ' && apt-get clean \\',
    ' && rm -rf /var/lib/apt/lists/*',
    'COPY start-proxy /usr/local/bin/codeact-proxy',
    'RUN chmod 0755 /usr/local/bin/codeact-proxy',
    // Debian's proxy user; the container runs as it, with every capability dropped.
    'USER proxy',
    'CMD ["/usr/local/bin/codeact-proxy"]',
    '',
  ].join('\n');
  return { dockerfile, files: { 'start-proxy': START_SCRIPT } };
}

export function proxyImageTag(context = proxyImageContext()): { tag: string; hash: string } {
  const h = createHash('sha256').update(`codeact-sandbox proxy 1\0${context.dockerfile}`);
  for (const name of Object.keys(context.files).sort()) h.update(`\0${name}\0${context.files[name]}`);
  const hash = h.digest('hex');
  return { tag: `${PROXY_REPOSITORY}:${hash.slice(0, 16)}`, hash };
}

/** The proxy image: found by tag, else built (one build per engine at a time). Resolves with its tag. */
export async function ensureProxyImage(o: { docker: Dockerode; log: Logger; signal?: AbortSignal; logHint: string }): Promise<string> {
  const context = proxyImageContext();
  const { tag, hash } = proxyImageTag(context);
  try {
    await o.docker.getImage(tag).inspect();
    return tag;
  } catch (e) {
    if (isEngineFailure(e)) throw engineFailure(e, o.docker);
  }
  return shareBuild(
    o.docker,
    `proxy:${tag}`,
    { signal: o.signal, timeoutMs: PROXY_BUILD_TIMEOUT_MS },
    async (signal, emit) => {
      const base = ROUTES.debian.base;
      let start;
      try {
        start = await probeBase(o.docker, base, { signal, log: o.log, onProgress: emit });
      } catch (e) {
        if (e instanceof PullCancelled) throw cancelled();
        throw e;
      }
      if (!start.ok) {
        const why = startFailureText(base, start.failure);
        throw new ImageBuildError(
          'image_unavailable',
          `The network proxy could not be built, so the program was not run: ${why}. Ask the user to make ${base} available on the engine, or to empty the network allow-list.`,
          `CodeAct Sandbox cannot build its network proxy: ${why}. Load ${base} into the engine, or empty the network allow-list.`,
        );
      }
      o.log.info(`network proxy: building ${tag} from ${base} (Debian's squid-openssl)`);
      const started = Date.now();
      try {
        await runBuild({
          docker: o.docker,
          context,
          tag,
          labels: { [LABEL.managed]: LABEL_SCHEMA, [IMAGE_LABEL.kind]: 'proxy', [IMAGE_LABEL.hash]: hash },
          signal,
          log: o.log,
          logPrefix: 'network proxy build',
          onProgress: emit,
        });
      } catch (e) {
        if (signal.aborted) throw cancelled();
        if (isEngineFailure(e) && !(e instanceof BuildFailed)) throw engineFailure(e, o.docker);
        const why = e instanceof BuildFailed ? e.message : describeError(e);
        throw new ImageBuildError(
          'build_failed',
          `The network proxy could not be built, so the program was not run; the build log is in ${o.logHint}. Ask the user to look at it, or to empty the network allow-list.`,
          `Building the CodeAct Sandbox network proxy failed (${why}). The build log is in ${o.logHint}.`,
          { cause: e },
        );
      }
      o.log.info(`network proxy image ${tag} built in ${((Date.now() - started) / 1000).toFixed(1)} s`);
      await pruneImages(o.docker, o.log, { repository: PROXY_REPOSITORY, kind: 'proxy', keep: [tag] }).catch((e: unknown) =>
        o.log.warn(`could not prune old proxy images: ${describeError(e)}`),
      );
      return tag;
    },
    cancelled,
  );
}

function cancelled(): ToolError {
  return new ToolError('cancelled', 'The run was cancelled while the network proxy was being built; the program was not run.');
}
