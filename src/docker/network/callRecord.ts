/**
 * One call's record, built from its log entries as they are read: connections within the caps
 * (refused ones past MAX_RECORDED_BLOCKED, and any past the total, are counted), and tunnels
 * accepted in the call and not ended by its end kept as open. Pure: runActivity.ts feeds it.
 */
import { MAX_RECORDED_BLOCKED, MAX_RECORDED_CONNECTIONS, type Connection, type NetworkActivity } from '../../core/network';
import type { LogEntry } from './accessLog';

export class CallRecord {
  private readonly connections: Connection[] = [];
  private readonly omitted = { allowed: 0, blocked: 0 };
  private blocked = 0;
  /** Tunnels accepted and not yet ended, by client port (a tunnel's acceptance and end share it). */
  private readonly open = new Map<number, Connection>();

  add(entry: Extract<LogEntry, { kind: 'connection' | 'tunnel' }>): void {
    if (entry.kind === 'tunnel') {
      this.open.set(entry.clientPort, entry.connection);
      return;
    }
    this.open.delete(entry.clientPort);
    this.keep(entry.connection);
  }

  /** The record at the call's end: what is still open is kept as open. */
  finish(complete: boolean): NetworkActivity {
    for (const c of this.open.values()) this.keep(c);
    this.open.clear();
    const omitted = this.omitted.allowed + this.omitted.blocked > 0 ? { omitted: { ...this.omitted } } : {};
    return { connections: [...this.connections], complete, ...omitted };
  }

  private keep(c: Connection): void {
    if (this.connections.length < MAX_RECORDED_CONNECTIONS && (c.allowed || this.blocked < MAX_RECORDED_BLOCKED)) {
      this.connections.push(c);
      if (!c.allowed) this.blocked++;
    } else {
      this.omitted[c.allowed ? 'allowed' : 'blocked']++;
    }
  }
}
