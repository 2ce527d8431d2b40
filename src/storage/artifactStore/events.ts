export interface Disposable {
  dispose(): void;
}

/** Who listens to the store: a view refreshes on every change, its badge counts new files. */
export class StoreEvents {
  private readonly listeners = new Set<() => void>();
  private readonly fileListeners = new Set<(count: number) => void>();

  /** Called after runs are added or deleted, for a view to refresh. */
  onDidChange(listener: () => void): Disposable {
    this.listeners.add(listener);
    return { dispose: () => this.listeners.delete(listener) };
  }

  /** Called when a finished run kept files, with how many (the view's badge). */
  onDidAddFiles(listener: (count: number) => void): Disposable {
    this.fileListeners.add(listener);
    return { dispose: () => this.fileListeners.delete(listener) };
  }

  changed(): void {
    for (const listener of [...this.listeners]) quietly(() => listener());
  }

  filesAdded(count: number): void {
    for (const listener of [...this.fileListeners]) quietly(() => listener(count));
  }
}

/** A failing view must not fail the run that changed the store. */
function quietly(call: () => void): void {
  try {
    call();
  } catch {
    // (the view's own failure)
  }
}
