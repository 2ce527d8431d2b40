/**
 * Reads an image build's event stream (the engine's /build JSON messages) as phases a person
 * can follow: pulling the base, downloading and installing packages (n of m where apt's or pip's
 * output says how many), checking them. Every line of output also goes to the log as it comes.
 */

export type BuildPhase = 'choosing-route' | 'pulling-base' | 'downloading-packages' | 'installing-packages' | 'checking-packages' | 'finishing';

export interface BuildProgress {
  phase: BuildPhase;
  /** One human line: "Installing packages: 120 of 212 (python3-pandas)". */
  message: string;
  done?: number;
  total?: number;
  /** 0..1 when known (layers of a pull, n of m). */
  fraction?: number;
}

export type BuildProgressListener = (progress: BuildProgress) => void;

/** One message of the engine's build stream (legacy builder JSON). */
export interface BuildEvent {
  stream?: string;
  status?: string;
  error?: string;
  errorDetail?: { message?: string; code?: number };
  aux?: { ID?: string };
}

/** Lines of output kept for an error's cause and for reading pip's verdict. */
const TAIL_LINES = 200;

export class BuildOutput {
  private pending = '';
  private readonly tailLines: string[] = [];
  private aptTotal: number | undefined;
  private installed = 0;
  private collected = 0;
  private pipTotal: number | undefined;
  /** The id the engine reported for the built image. */
  imageId: string | undefined;
  /** The engine's error message, when the build failed. */
  error: string | undefined;

  constructor(
    private readonly emit: BuildProgressListener,
    private readonly logLine: (line: string) => void,
  ) {}

  /** The last lines of output (at most 200). */
  get tail(): readonly string[] {
    return this.tailLines;
  }

  event(e: BuildEvent): void {
    if (e.aux?.ID) this.imageId = e.aux.ID;
    if (e.error || e.errorDetail?.message) {
      this.error = e.errorDetail?.message ?? e.error;
      this.line(`error: ${this.error}`);
      return;
    }
    const text = e.stream ?? (e.status ? `${e.status}\n` : '');
    if (!text) return;
    this.pending += text;
    const lines = this.pending.split(/\r?\n|\r/);
    this.pending = lines.pop() ?? '';
    for (const l of lines) this.line(l);
  }

  /** Flushes a last line without a newline. */
  end(): void {
    if (this.pending) this.line(this.pending);
    this.pending = '';
  }

  private line(raw: string): void {
    const line = raw.replace(/\x1b\[[0-9;]*[A-Za-z]/g, '').trimEnd();
    if (!line.trim()) return;
    this.logLine(line);
    this.tailLines.push(line);
    if (this.tailLines.length > TAIL_LINES) this.tailLines.shift();
    this.parse(line.trim());
  }

  private parse(line: string): void {
    let m: RegExpExecArray | null;
    if (/^Step \d+\/\d+ : RUN .*list-distributions\.py/.test(line)) {
      this.emit({ phase: 'checking-packages', message: 'Checking that every package imports' });
    } else if ((m = /^(\d+) upgraded, (\d+) newly installed/.exec(line))) {
      this.aptTotal = Number(m[2]);
      this.emit({ phase: 'downloading-packages', message: `Downloading packages: 0 of ${this.aptTotal}`, done: 0, total: this.aptTotal, fraction: 0 });
    } else if (this.aptTotal !== undefined && (m = /^Get:(\d+) \S+ \S+ \S+ (\S+)/.exec(line))) {
      // Before the "newly installed" line, Get: lines are apt-get update's index files.
      const n = Math.min(Number(m[1]), this.aptTotal);
      this.emit({ phase: 'downloading-packages', message: `Downloading packages: ${n} of ${this.aptTotal} (${m[2]})`, done: n, total: this.aptTotal, fraction: n / this.aptTotal });
    } else if (this.aptTotal !== undefined && (m = /^Setting up ([^\s:]+)/.exec(line))) {
      const n = Math.min(++this.installed, this.aptTotal);
      this.emit({ phase: 'installing-packages', message: `Installing packages: ${n} of ${this.aptTotal} (${m[1]})`, done: n, total: this.aptTotal, fraction: n / this.aptTotal });
    } else if ((m = /^Collecting (\S+)/.exec(line))) {
      this.collected++;
      this.emit({ phase: 'downloading-packages', message: `Downloading packages: ${this.collected} so far (${m[1]})`, done: this.collected });
    } else if ((m = /^Installing collected packages: (.*)$/.exec(line))) {
      this.pipTotal = m[1]!.split(',').filter((s) => s.trim()).length;
      this.emit({ phase: 'installing-packages', message: `Installing ${this.pipTotal} packages`, done: 0, total: this.pipTotal, fraction: 0 });
    } else if (/^Successfully installed /.test(line) && this.pipTotal !== undefined) {
      this.emit({ phase: 'installing-packages', message: `Installed ${this.pipTotal} packages`, done: this.pipTotal, total: this.pipTotal, fraction: 1 });
    }
  }
}
