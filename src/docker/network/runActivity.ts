/**
 * A run's connections, from the proxy's access log. At the end of a call the sandbox sends the
 * proxy a marker (a request for a reserved name, refused at once): squid logs a connection when
 * it ends, and the marker's program first ends the call's processes and waits until each is dead
 * (its sockets closed), so once the marker's line is read, every line of the call is in. No
 * sleep, no guess.
 */
import { randomBytes } from 'node:crypto';
import { Writable } from 'node:stream';
import type Dockerode from 'dockerode';
import type { NetworkActivity } from '../../core/network';
import { endAllSparingLines, guestEnded, startGuest } from '../container';
import { ENGINE_DEADLINE_MS, withDeadline } from '../engine';
import { parseLogLine } from './accessLog';
import { CallRecord } from './callRecord';
import type { Egress } from './egress';
import { MARK_DOMAIN, PROXY_PORT } from './squidConfig';

/** How long the marker's line may take to come back before the record is called incomplete. */
const MARK_WAIT_MS = 15_000;

/** The marker's program: one refused request through the proxy (fixed source; the values are ours). */
function markSource(address: string, nonce: string): string {
  const host = `m-${nonce}.${MARK_DOMAIN}`;
  return [
    'import socket',
    `s = socket.create_connection((${JSON.stringify(address)}, ${PROXY_PORT}), timeout=10)`,
    `s.sendall(b"GET http://${host}/ HTTP/1.1\\r\\nHost: ${host}\\r\\nConnection: close\\r\\n\\r\\n")`,
    'while s.recv(65536):',
    '    pass',
  ].join('\n');
}

/**
 * The end-of-call marker's program: the call's processes first, sparing `spare` (a state holder),
 * so that a tunnel one of them held is closed, and so logged, before the marker. Whoever else
 * ended them (the runner, the kill after `docker exec`) may not have waited for them to die.
 */
function endMarkSource(address: string, nonce: string, spare: readonly number[]): string {
  return `${endAllSparingLines(spare)}\n${markSource(address, nonce)}`;
}

/** A call's marker as the proxy logged it: the next call's record starts after it. */
export interface RunMark {
  nonce: string;
  /** When the proxy logged it, by the proxy's clock (ms); for a start marker, a moment before it was sent. */
  time: number;
}

/**
 * Sends a marker before a sandbox's first call (or its first after a new proxy): the call's record
 * then starts after it, and a record whose start was rotated out of the proxy's log (a flood of
 * lines) says it is incomplete, as a later call's does. Undefined when it could not be sent.
 */
export async function startMark(sandbox: Dockerode.Container, egress: Egress): Promise<RunMark | undefined> {
  const nonce = randomBytes(6).toString('hex');
  const time = Date.now() - 1000;
  try {
    await guestEnded(await startGuest(sandbox, markSource(egress.proxyAddress, nonce), ENGINE_DEADLINE_MS));
    return { nonce, time };
  } catch {
    return undefined;
  }
}

/** Where a call's record starts, and what its end spares. */
export interface CallBounds {
  /** For a sandbox's first call: the record holds what was logged since (ms). */
  since: number;
  /** The previous call's marker: the record holds what was logged after it. */
  previous: RunMark | undefined;
  /** Processes the end of the call leaves alone: the session's state holder. */
  spare: readonly number[];
}

/**
 * The connections the sandbox at `client` made in this call, up to the marker sent now, after the
 * call's processes (all but `spare`) are dead: those after the previous call's marker, or, for a
 * sandbox's first call, those logged since `since` (ms). Never throws: a record that could not be
 * read whole says so.
 */
export async function runActivity(
  docker: Dockerode,
  sandbox: Dockerode.Container,
  egress: Egress,
  client: string,
  { since, previous, spare }: CallBounds,
): Promise<{ activity: NetworkActivity; mark?: RunMark }> {
  const nonce = randomBytes(6).toString('hex');
  const record = new CallRecord();
  const proxy = docker.getContainer(egress.proxyName);
  let mark: RunMark | undefined;
  // After the previous marker (the engine's log times are the proxy's clock), else since the call began.
  let collecting = previous === undefined;
  // The previous marker not found before this one: the log was rotated past it, and the record may miss lines.
  let previousSeen = previous === undefined;
  const from = previous ? previous.time : since;
  let stream: (NodeJS.ReadableStream & { destroy(): void }) | undefined;
  let markerEnded: Promise<void> | undefined;
  const result = (complete: boolean) => ({ activity: record.finish(complete), ...(mark ? { mark } : {}) });
  try {
    // The marker goes at once, not after the log's answer: Podman answers a follow request only
    // when it has a line to send. A line logged before the follow began is in it (`since`).
    const following = withDeadline(
      proxy.logs({ follow: true, stdout: true, stderr: false, since: Math.floor(from / 1000) - 1 }),
      ENGINE_DEADLINE_MS,
      'read proxy log',
    ) as Promise<NodeJS.ReadableStream & { destroy(): void }>;
    let abandoned = false;
    following.then((s) => abandoned && s.destroy(), () => {});
    try {
      markerEnded = guestEnded(await startGuest(sandbox, endMarkSource(egress.proxyAddress, nonce, spare), ENGINE_DEADLINE_MS));
      stream = await following;
    } catch {
      abandoned = true;
      return result(false);
    }
    const marked = new Promise<boolean>((resolve) => {
      let text = '';
      const sink = new Writable({
        write(chunk: Buffer, _e, done) {
          text += chunk.toString('utf8');
          let i: number;
          while (!mark && (i = text.indexOf('\n')) >= 0) {
            const entry = parseLogLine(text.slice(0, i));
            text = text.slice(i + 1);
            if (!entry || entry.client !== client) continue;
            if (entry.kind === 'mark') {
              if (entry.nonce === previous?.nonce) collecting = previousSeen = true;
              if (entry.nonce === nonce) {
                mark = { nonce, time: entry.time };
                resolve(true);
              }
            } else if (collecting && (previous || entry.connection.time >= since - 1000)) {
              record.add(entry);
            }
          }
          done();
        },
      });
      docker.modem.demuxStream(stream!, sink, sink);
      stream!.on('end', () => resolve(false));
      stream!.on('error', () => resolve(false));
    });
    const seen = await withDeadline(marked, MARK_WAIT_MS, 'read the proxy log').catch(() => false);
    return result(seen && previousSeen);
  } catch {
    return result(false);
  } finally {
    stream?.destroy();
    // The marker runs as the sandbox's user: one still exiting when the next call starts is a
    // process that call did not start, and a session call that finds one cannot keep its state.
    // It ends as soon as the proxy closes its connection (its own timeout bounds it otherwise).
    if (markerEnded) await withDeadline(markerEnded, MARK_WAIT_MS, 'end the marker').catch(() => {});
  }
}
