/**
 * One call's record, built from its log entries as they are read: connections within the caps
 * (the first ones, the last ones, and one entry per host in between: CappedConnections), and
 * tunnels accepted in the call and not ended by its end kept as open. Pure: runActivity.ts feeds it.
 */
import { CappedConnections, type Connection, type NetworkActivity } from '../../core/network';
import type { LogEntry } from './accessLog';

export class CallRecord {
  private readonly kept = new CappedConnections();
  /** Tunnels accepted and not yet ended, by client port (a tunnel's acceptance and end share it). */
  private readonly open = new Map<number, Connection>();

  add(entry: Extract<LogEntry, { kind: 'connection' | 'tunnel' }>): void {
    if (entry.kind === 'tunnel') {
      this.open.set(entry.clientPort, entry.connection);
      return;
    }
    this.open.delete(entry.clientPort);
    this.kept.keep(entry.connection);
  }

  /** The record at the call's end: what is still open is kept as open. */
  finish(complete: boolean): NetworkActivity {
    for (const c of this.open.values()) this.kept.keep(c);
    this.open.clear();
    return this.kept.activity(complete);
  }
}
