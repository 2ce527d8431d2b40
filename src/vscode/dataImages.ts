/**
 * The data image (and the user's packages on it) as the extension gets it: found on the engine,
 * else built under one cancellable progress notification however many calls wait for it. A call
 * waits for a running build and its own Stop ends only its wait; the notification's Cancel stops
 * the build, and until the user starts it again (the Prepare command) calls get one sentence
 * saying how. Nothing here decides whether packages may be installed: sandboxDecision does.
 */
import type Dockerode from 'dockerode';
import { ToolError } from '../core/errors';
import type { Logger } from '../core/logger';
import {
  ImageBuildError,
  RequirementRejectedError,
  ensureDataImage,
  ensurePackagesImage,
  findDataImage,
  findPackagesImage,
  type BuildProgressListener,
  type DataImage,
  type PackagesImage,
} from '../docker';
import { PACKAGES_SETTING } from './sandboxDecision';
import { pullProgress } from './status';
import { ACTION, type Ui } from './ui';

/** The Docker layer's image operations (tests pass fakes). */
export interface DataImageOps {
  find: typeof findDataImage;
  ensure: typeof ensureDataImage;
  findPackages: typeof findPackagesImage;
  ensurePackages: typeof ensurePackagesImage;
}

export const DATA_IMAGE_OPS: DataImageOps = { find: findDataImage, ensure: ensureDataImage, findPackages: findPackagesImage, ensurePackages: ensurePackagesImage };

export const BUILD_TITLE = 'CodeAct Sandbox: building the sandbox image';
export const PACKAGES_TITLE = `CodeAct Sandbox: installing ${PACKAGES_SETTING}`;

const HINTS = {
  imageSetting: 'the codeactSandbox.image setting',
  prepare: 'the command "CodeAct Sandbox: Prepare Sandbox Image"',
  log: 'the CodeAct Sandbox output channel',
  packagesSetting: `the ${PACKAGES_SETTING} setting`,
};

export interface PreparedImage {
  tag: string;
  /** What was built now (empty: everything was there). */
  built: string[];
}

export class DataImages {
  private dataBuild: Promise<DataImage> | undefined;
  private readonly packageBuilds = new Map<string, Promise<PackagesImage>>();
  /** Why calls are refused until the user prepares the image again: a cancel, or pip's verdict on a list. */
  private stopped: { key: string; error: ImageBuildError } | undefined;

  constructor(
    private readonly deps: {
      ui: Ui;
      log: Logger;
      /** Told when a build of this window starts and ends (the status bar). */
      onBuilding: (building: boolean) => void;
      ops?: DataImageOps;
    },
  ) {}

  private get ops(): DataImageOps {
    return this.deps.ops ?? DATA_IMAGE_OPS;
  }

  /** True while this window builds an image. */
  get building(): boolean {
    return this.dataBuild !== undefined || this.packageBuilds.size > 0;
  }

  /** The tag a call's sandbox runs; builds when needed, waits for a running build (until `signal`). */
  async image(docker: Dockerode, requirements: readonly string[], signal: AbortSignal): Promise<string> {
    const refused = this.stopped;
    if (refused && (refused.key === 'data' || refused.key === keyOf(requirements))) throw refused.error;
    const base = await this.base(docker, signal, false);
    return (await this.packages(docker, base, requirements, signal)).tag;
  }

  /** The Prepare command: builds what is missing (or all of it again with `force`), whatever was cancelled before. */
  async prepare(docker: Dockerode, requirements: readonly string[], force = false): Promise<PreparedImage> {
    this.stopped = undefined;
    const never = new AbortController().signal;
    const base = await this.base(docker, never, force);
    const image = await this.packages(docker, base, requirements, never);
    return { tag: image.tag, built: [...(base.built ? [base.tag] : []), ...(image.built && image.tag !== base.tag ? [image.tag] : [])] };
  }

  /** Whether a call would build first: the data image, or the packages image on it, is not on the engine. Never builds. */
  async missing(docker: Dockerode, requirements: readonly string[]): Promise<boolean> {
    const base = await this.ops.find(docker);
    if (!base) return true;
    if (!requirements.length) return false;
    return (await this.ops.findPackages(docker, base, requirements).catch(() => undefined)) === undefined;
  }

  /** For pre-warming: the tag when everything is on the engine already, else undefined. Never builds. */
  async present(docker: Dockerode, requirements: readonly string[]): Promise<string | undefined> {
    if (this.stopped || this.building) return undefined;
    const base = await this.ops.find(docker);
    if (!base || !requirements.length) return base?.tag;
    return (await this.ops.findPackages(docker, base, requirements).catch(() => undefined))?.tag;
  }

  private async base(docker: Dockerode, signal: AbortSignal, force: boolean): Promise<DataImage> {
    if (!force && !this.dataBuild) {
      const found = await this.ops.find(docker);
      if (found) return found;
    }
    if (!this.dataBuild) {
      this.dataBuild = this.withNotification(
        BUILD_TITLE,
        'data',
        (buildSignal, onProgress) => this.ops.ensure({ docker, log: this.deps.log, signal: buildSignal, buildSignal, onProgress, hints: HINTS, ...(force ? { force } : {}) }),
        () => (this.dataBuild = undefined),
      );
    }
    return waitFor(this.dataBuild, signal, 'The run was cancelled while the sandbox image was being built; the build goes on, and a later call uses the image once it is ready.');
  }

  private async packages(docker: Dockerode, base: DataImage, requirements: readonly string[], signal: AbortSignal): Promise<PackagesImage> {
    if (!requirements.length) return { tag: base.tag, id: base.id, requirements: [], built: false, distributions: base.distributions };
    const key = keyOf(requirements);
    let build = this.packageBuilds.get(key);
    if (!build) {
      const found = await this.ops.findPackages(docker, base, requirements).catch(() => undefined);
      if (found) return found;
      build = this.withNotification(
        PACKAGES_TITLE,
        key,
        (buildSignal, onProgress) => this.ops.ensurePackages({ docker, log: this.deps.log, base, requirements, signal: buildSignal, buildSignal, onProgress, hints: HINTS }),
        () => this.packageBuilds.delete(key),
      );
      this.packageBuilds.set(key, build);
    }
    return waitFor(build, signal, 'The run was cancelled while the extra Python packages were being installed; the build goes on, and a later call uses the image once it is ready.');
  }

  /** One notification per build; its Cancel stops the build. A failure is shown to the user once, here. */
  private withNotification<T>(title: string, key: string, run: (signal: AbortSignal, onProgress: BuildProgressListener) => Promise<T>, ended: () => void): Promise<T> {
    this.deps.onBuilding(true);
    const started = Date.now();
    return this.deps.ui
      .withProgress(title, (report, cancel) => {
        const step = pullProgress(report);
        return run(cancel, (p) => step(p.message, p.fraction));
      })
      .then(
        (result) => {
          this.deps.log.info(`${title.replace('CodeAct Sandbox: ', '')}: done in ${((Date.now() - started) / 1000).toFixed(1)} s`);
          return result;
        },
        (e: unknown) => {
          if (e instanceof ImageBuildError) {
            if (e.code === 'cancelled' || e instanceof RequirementRejectedError) this.stopped = { key, error: e };
            if (e.code === 'cancelled') this.deps.ui.showInfo(`CodeAct Sandbox: ${e.userMessage}`);
            else this.deps.ui.showError(`CodeAct Sandbox: ${e.userMessage}`, ACTION.showLog, ACTION.prepare, ACTION.chooseImage);
          }
          throw e;
        },
      )
      .finally(() => {
        ended();
        this.deps.onBuilding(this.building);
      });
  }
}

function keyOf(requirements: readonly string[]): string {
  return JSON.stringify([...requirements].map((r) => r.trim()).sort());
}

/** The build's result, or a cancelled call when `signal` fires first (the build goes on). */
function waitFor<T>(build: Promise<T>, signal: AbortSignal, cancelled: string): Promise<T> {
  if (signal.aborted) return Promise.reject(new ToolError('cancelled', cancelled));
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(new ToolError('cancelled', cancelled));
    signal.addEventListener('abort', onAbort, { once: true });
    build.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}
