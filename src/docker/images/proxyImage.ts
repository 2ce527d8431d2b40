/**
 * The network proxy's image: Debian's squid (the OpenSSL build, which can peek at a TLS client
 * hello) on the Debian base the data image's debian route uses, built on the user's engine once
 * and reused until its recipe changes. Only sandboxes with an allow-list need it.
 */
import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
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
import { tagsIn } from './repoTags';
import { listImagesLabelled } from './labelled';

export const PROXY_REPOSITORY = 'codeact-sandbox/proxy';
const PROXY_BUILD_TIMEOUT_MS = 10 * 60_000;
/** Where the proxy keeps what it makes at start (a tmpfs): its configuration and peek key. */
export const PROXY_RUN_DIR = '/run/codeact-proxy';
/** The environment variable the proxy's configuration is given in. */
export const PROXY_CONF_ENV = 'CODEACT_PROXY_CONF';

/** The environment variable the proxy's hosts file is given in (tests only: names only it resolves). */
export const PROXY_HOSTS_ENV = 'CODEACT_PROXY_HOSTS';
/** The proxy's start: its firewall first, as root, then the proxy as Debian's proxy user. */
export const PROXY_GATE_COMMAND = '/usr/local/bin/codeact-proxy-gate';
/** Set to 1 when sandboxes share the proxy's network namespace (Podman): no other user may send but over loopback. */
export const PROXY_SHARED_ENV = 'CODEACT_PROXY_SHARED';
/** The IPv4 ranges the proxy itself may never send to (squidConfig's NEVER_REACHED), space-separated. */
export const PROXY_NEVER_ENV = 'CODEACT_PROXY_NEVER';
/** Tests only: ranges among those it may reach on ports 80 and 443 all the same (the test servers). */
export const PROXY_REACH_ENV = 'CODEACT_PROXY_REACH';
/**
 * Set to 1 when credentials are bound: the gate starts the credential forwarder first, as a user
 * of its own, handing it the container's standard input (its bindings and their values).
 */
export const PROXY_CREDENTIALS_ENV = 'CODEACT_PROXY_CREDENTIALS';
/** The forwarder's own tmpfs: its leaf and key, nothing else (the CA's key is destroyed in it). */
export const CREDENTIALS_RUN_DIR = '/run/codeact-credentials';
/** The forwarder's user (Debian's dynamic range): squid's user cannot read its memory or files. */
export const CREDENTIALS_UID = 990;
/** Where squid reaches the forwarder, on the container's loopback. */
export const CREDENTIALS_PORT = 3129;
const FORWARDER = '/usr/local/bin/codeact-credentials';
const SUPERVISOR = '/usr/local/bin/codeact-proxy-watch';

declare const __CODEACT_CREDENTIALS_SOURCE__: string | undefined;
let forwarderCache: string | undefined;

/** The forwarder's Python (resources/proxy/credentials.py): inline in a bundle, read from the sources otherwise. */
export function forwarderSource(): string {
  if (typeof __CODEACT_CREDENTIALS_SOURCE__ === 'string') return __CODEACT_CREDENTIALS_SOURCE__;
  forwarderCache ??= fs.readFileSync(path.resolve(__dirname, '../../../resources/proxy/credentials.py'), 'utf8');
  return forwarderCache;
}

/** squid's port, as the gate opens it (squidConfig's PROXY_PORT; the image does not import the network layer). */
const PROXY_PORT_FOR_GATE = 3128;

/**
 * The proxy's start: the key squid's ssl-bump port must have is made in memory at each start (it
 * only peeks and splices, so nothing is ever signed with it), the configuration (and, for tests,
 * a hosts file) written from the environment, and squid run in the foreground.
 */
const START_SCRIPT = [
  '#!/bin/sh',
  'set -eu',
  'umask 077',
  `openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 3650 -subj /CN=codeact-proxy -keyout ${PROXY_RUN_DIR}/peek.pem -out ${PROXY_RUN_DIR}/peek.pem 2>/dev/null`,
  `printf '%s\\n' "$${PROXY_CONF_ENV}" > ${PROXY_RUN_DIR}/squid.conf`,
  `printf '%s\\n' "\${${PROXY_HOSTS_ENV}:-}" > ${PROXY_RUN_DIR}/hosts`,
  `exec squid -N -f ${PROXY_RUN_DIR}/squid.conf`,
  '',
].join('\n');

/**
 * PID 1 of a proxy with credentials (root, doing nothing else): when the forwarder or squid ends,
 * everything in the container is ended and the container exits, so the sandbox is replaced at its
 * next call. Without it the forwarder's end left squid serving, every bound request failing for
 * the sandbox's life, and the forwarder's port free for a program sharing the namespace to take.
 */
const SUPERVISOR_SCRIPT = [
  'import os, signal, sys',
  'watched = {int(a): name for a, name in zip(sys.argv[1::2], sys.argv[2::2])}',
  '',
  '',
  'def end(code):',
  '    os.kill(-1, signal.SIGKILL)  # every process of the container but this one',
  '    os._exit(code)',
  '',
  '',
  'signal.signal(signal.SIGTERM, lambda *_: end(0))',
  'signal.signal(signal.SIGINT, lambda *_: end(0))',
  'while True:',
  '    pid, _ = os.wait()',
  '    if pid in watched:',
  "        sys.stderr.write(f'codeact-proxy-gate: {watched[pid]} stopped, so the proxy stops\\n')",
  '        end(1)',
  '',
].join('\n');

/**
 * The proxy's start: as root with NET_ADMIN, it sets its network namespace's firewall, becomes
 * Debian's proxy user with no capability left, and starts the proxy. squid's ACLs are one fence;
 * this is the kernel's, for squid's own traffic: DNS to the name servers it was given, TCP 80
 * and 443 to addresses outside the never-reached ranges, replies, and nothing else. Where the
 * sandbox shares the namespace (Podman, sidecar.ts), no other user may send anywhere but over
 * loopback, and a name server on loopback (the sandbox's to answer) is refused. A firewall that
 * cannot be set ends the container before squid listens, so no sandbox ever uses it.
 */
const GATE_SCRIPT = [
  '#!/bin/sh',
  'set -eu',
  "fail() { echo \"codeact-proxy-gate: $*\" >&2; exit 1; }",
  "[ \"$(id -u)\" = 0 ] || fail 'must start as root to set the firewall'",
  `shared=\${${PROXY_SHARED_ENV}:-0}`,
  `never=\${${PROXY_NEVER_ENV}:?the never-reached ranges are not set}`,
  `reach=\${${PROXY_REACH_ENV}:-}`,
  "servers=$(awk '$1 == \"nameserver\" && $2 !~ /:/ {print $2}' /etc/resolv.conf)",
  // Docker's own resolver (127.0.0.11, on a network of the user's) is held by the engine, which no
  // sandbox can answer for; it is fenced below so only the proxy's users may ask it. Any other
  // name server on loopback could be a sandbox's to answer.
  "if [ \"$shared\" = 1 ]; then ! grep -Eq '^[[:space:]]*nameserver[[:space:]]+(127\\.|::1)' /etc/resolv.conf || [ \"$(awk '$1 == \"nameserver\" {print $2}' /etc/resolv.conf)\" = 127.0.0.11 ] || fail 'the engine gave the proxy a name server on loopback, which the sandbox could answer'; fi",
  'uid=$(id -u proxy)',
  'gid=$(id -g proxy)',
  `credentials=\${${PROXY_CREDENTIALS_ENV}:-0}`,
  // The users that may send beyond the container: squid's, and the credential forwarder's when it runs.
  'owners=$uid',
  `if [ "$credentials" = 1 ]; then cuid=$(id -u codeact-cred); cgid=$(id -g codeact-cred); owners="$uid $cuid"; fi`,
  // Debian's iptables speaks nf_tables; a kernel without it has the legacy tables.
  'ipt=iptables',
  'iptables -w -L -n >/dev/null 2>&1 || ipt=iptables-legacy',
  'for chain in INPUT FORWARD OUTPUT; do $ipt -w -P $chain DROP; done',
  // Only the filter table: the engine's own NAT rules (Docker's name server on 127.0.0.11) stay.
  '$ipt -w -F',
  '$ipt -w -A INPUT -i lo -j ACCEPT',
  '$ipt -w -A INPUT -m conntrack --ctstate ESTABLISHED,RELATED -j ACCEPT',
  // Docker: sandboxes reach squid on their own networks, which it joins after this.
  `if [ "$shared" != 1 ]; then $ipt -w -A INPUT -p tcp --dport ${PROXY_PORT_FOR_GATE} -j ACCEPT; fi`,
  '$ipt -w -A OUTPUT -m conntrack --ctstate ESTABLISHED,RELATED -j ACCEPT',
  // The refusal below is an ICMP message to the sender itself, over loopback.
  '$ipt -w -A OUTPUT -o lo -p icmp --icmp-type destination-unreachable -j ACCEPT',
  // The forwarder is squid's to reach, no one else's (a sandbox shares this loopback on Podman).
  `if [ "$credentials" = 1 ]; then $ipt -w -A OUTPUT -o lo -p tcp --dport ${CREDENTIALS_PORT} -m owner ! --uid-owner $uid -j REJECT; fi`,
  // Sharing the namespace, a sandbox would reach a resolver on loopback as well: only the proxy's users may ask it.
  'if [ "$shared" = 1 ]; then for ns in $servers; do case "$ns" in 127.*) for o in $owners; do $ipt -w -A OUTPUT -o lo -d "$ns" -m owner --uid-owner $o -j ACCEPT; done; $ipt -w -A OUTPUT -o lo -d "$ns" -j REJECT;; esac; done; fi',
  // Loopback: squid and its sandbox (Podman; Docker with credentials), or squid and the engine's name server (Docker: no one else is here).
  'if [ "$shared" = 1 ]; then $ipt -w -A OUTPUT -o lo -s 127.0.0.0/8 -d 127.0.0.0/8 -j ACCEPT; else $ipt -w -A OUTPUT -o lo -j ACCEPT; fi',
  'for o in $owners; do for ns in $servers; do for proto in udp tcp; do $ipt -w -A OUTPUT -m owner --uid-owner $o -p $proto -d "$ns" --dport 53 -j ACCEPT; done; done; done',
  // The forwarder goes out on 443 only (it speaks only HTTPS to a bound host).
  'for o in $owners; do for r in $reach; do $ipt -w -A OUTPUT -m owner --uid-owner $o -p tcp -d "$r" -m multiport --dports 80,443 -j ACCEPT; done; done',
  'for r in $never; do $ipt -w -A OUTPUT -d "$r" -j REJECT --reject-with icmp-host-unreachable; done',
  '$ipt -w -A OUTPUT -m owner --uid-owner $uid -p tcp -m multiport --dports 80,443 -j ACCEPT',
  'if [ "$credentials" = 1 ]; then $ipt -w -A OUTPUT -m owner --uid-owner $cuid -p tcp --dport 443 -j ACCEPT; fi',
  '$ipt -w -A OUTPUT -j REJECT --reject-with icmp-host-unreachable',
  // IPv6 is off by sysctl; closed here too where the kernel has it.
  'if ip6tables -w -L -n >/dev/null 2>&1; then for chain in INPUT FORWARD OUTPUT; do ip6tables -w -P $chain DROP; done; ip6tables -w -F; ip6tables -w -A INPUT -i lo -j ACCEPT; ip6tables -w -A OUTPUT -o lo -j ACCEPT; fi',
  "echo 'codeact-proxy-gate: firewall set' >&2",
  // squid opens its log by path (/dev/stdout), which the proxy user may not while the engine's
  // pipes are root's: they are opened to it (nothing else runs in this container).
  "chmod o+w /proc/self/fd/1 /proc/self/fd/2 || fail 'cannot open the log pipes to the proxy user'",
  // The forwarder alone gets the container's standard input: its bindings and their values. A
  // background job's input would be /dev/null unless redirected, hence fd 3. squid gets none.
  'exec 3<&0 0</dev/null',
  `if [ "$credentials" = 1 ]; then setpriv --reuid="$cuid" --regid="$cgid" --clear-groups --inh-caps=-all --bounding-set=-all --no-new-privs -- python3 -I ${FORWARDER} ${CREDENTIALS_RUN_DIR} <&3 3<&- & fi`,
  'exec 3<&-',
  `if [ "$credentials" = 1 ]; then forwarder=$!; fi`,
  // squid starts once the forwarder listens: a parent it found closed at its start it would take for down.
  `if [ "$credentials" = 1 ]; then n=0; until grep -q '^ *[0-9]*: 0100007F:${CREDENTIALS_PORT.toString(16).toUpperCase().padStart(4, '0')} 00000000:0000 0A' /proc/net/tcp; do n=$((n+1)); [ $n -lt 600 ] || fail 'the credential forwarder did not start'; [ -d /proc/$forwarder ] || fail 'the credential forwarder stopped'; sleep 0.1; done; fi`,
  'squid() { exec setpriv --reuid="$uid" --regid="$gid" --clear-groups --inh-caps=-all --bounding-set=-all --no-new-privs -- /usr/local/bin/codeact-proxy; }',
  // With credentials, PID 1 stays to end the container with either process (SUPERVISOR_SCRIPT).
  `if [ "$credentials" = 1 ]; then squid & exec python3 -I ${SUPERVISOR} "$forwarder" 'the credential forwarder' "$!" squid; fi`,
  'squid',
  '',
].join('\n');

/**
 * The month the proxy image is made for ("202612"). A new month's image is built anew, with
 * Debian's squid as it is then: a security update reaches users within a month of its release.
 */
export function proxyPeriod(now = new Date()): string {
  return `${now.getUTCFullYear()}${String(now.getUTCMonth() + 1).padStart(2, '0')}`;
}

/** The proxy's build context; `period` is in its RUN line, so a new month's build takes nothing from the build cache. */
export function proxyImageContext(period = proxyPeriod()): BuildContext {
  const dockerfile = [
    '# CodeAct Sandbox network proxy: Debian\'s squid. Generated; its hash and month are the tag.',
    `FROM ${ROUTES.debian.base}`,
    `RUN : refreshed ${period} \\`,
    ' && apt-get update \\',
    // python3 and ca-certificates: the credential forwarder, and the trust store it checks servers against.
    ' && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends -o Dpkg::Use-Pty=0 squid-openssl openssl iptables python3 ca-certificates \\',
    ' && apt-get clean \\',
    ' && rm -rf /var/lib/apt/lists/* \\',
    ` && useradd --system --uid ${CREDENTIALS_UID} --user-group --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin codeact-cred`,
    'COPY start-proxy /usr/local/bin/codeact-proxy',
    `COPY start-gate ${PROXY_GATE_COMMAND}`,
    `COPY credentials.py ${FORWARDER}`,
    `COPY watch.py ${SUPERVISOR}`,
    `RUN chmod 0755 /usr/local/bin/codeact-proxy ${PROXY_GATE_COMMAND} && chmod 0644 ${FORWARDER} ${SUPERVISOR}`,
    // Debian's proxy user; the container starts as root for the gate, which ends as this user.
    'USER proxy',
    'CMD ["/usr/local/bin/codeact-proxy"]',
    '',
  ].join('\n');
  return { dockerfile, files: { 'start-proxy': START_SCRIPT, 'start-gate': GATE_SCRIPT, 'credentials.py': forwarderSource(), 'watch.py': SUPERVISOR_SCRIPT } };
}

function contextHash(context: BuildContext): string {
  const h = createHash('sha256').update(`codeact-sandbox proxy 1\0${context.dockerfile}`);
  for (const name of Object.keys(context.files).sort()) h.update(`\0${name}\0${context.files[name]}`);
  return h.digest('hex');
}

/**
 * The proxy image's tag, `<recipe>-<month>`: `recipe` is the hash of the context without its
 * month (the same recipe in another month is an older build of it), `hash` of the context itself.
 */
export function proxyImageTag(period = proxyPeriod()): { tag: string; hash: string; recipe: string } {
  const recipe = contextHash(proxyImageContext('')).slice(0, 16);
  return { tag: `${PROXY_REPOSITORY}:${recipe}-${period}`, hash: contextHash(proxyImageContext(period)), recipe };
}

/** The newest image of the same recipe from an earlier month, if any: used when a new month's build cannot be made. */
async function earlierBuild(docker: Dockerode, recipe: string): Promise<string | undefined> {
  const images = await listImagesLabelled(docker, [`${IMAGE_LABEL.kind}=proxy`, `${PROXY_RECIPE_LABEL}=${recipe}`]).catch(() => []);
  const tags = images.flatMap((i) => tagsIn(i.RepoTags, PROXY_REPOSITORY)).filter((t) => t.startsWith(`${PROXY_REPOSITORY}:${recipe}-`));
  return tags.sort().at(-1);
}

/** The proxy image's recipe hash (proxyImageTag's `recipe`), as a label: earlier months' builds are found by it. */
const PROXY_RECIPE_LABEL = 'dev.codeact-sandbox.image.proxy-recipe';

/** The proxy image: found by tag, else built (one build per engine at a time). Resolves with its tag. */
export async function ensureProxyImage(o: { docker: Dockerode; log: Logger; signal?: AbortSignal; logHint: string }): Promise<string> {
  const period = proxyPeriod();
  const context = proxyImageContext(period);
  const { tag, hash, recipe } = proxyImageTag(period);
  try {
    await o.docker.getImage(tag).inspect();
    return tag;
  } catch (e) {
    if (isEngineFailure(e)) throw engineFailure(e, o.docker);
  }
  try {
    return await buildProxyImage(o, context, tag, hash, recipe);
  } catch (e) {
    // This month's build failed (no Debian archive answers, say): last month's squid is better
    // than no network, and the log says an update is waiting.
    const earlier = e instanceof ImageBuildError ? await earlierBuild(o.docker, recipe) : undefined;
    if (earlier === undefined) throw e;
    o.log.warn(`network proxy: could not build ${tag} (${describeError(e)}); using the earlier build ${earlier} until a build succeeds`);
    return earlier;
  }
}

function buildProxyImage(o: { docker: Dockerode; log: Logger; signal?: AbortSignal; logHint: string }, context: BuildContext, tag: string, hash: string, recipe: string): Promise<string> {
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
          labels: { [LABEL.managed]: LABEL_SCHEMA, [IMAGE_LABEL.kind]: 'proxy', [IMAGE_LABEL.hash]: hash, [PROXY_RECIPE_LABEL]: recipe },
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
