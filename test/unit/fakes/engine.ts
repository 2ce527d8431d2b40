// The little of a Docker engine the provider asks itself (its sandboxes are fakes of their own,
// test/unit/fakes/sandboxes.ts): a ping, the runtimes and the version, whether an image is there.
import { PassThrough } from 'node:stream';
import type Dockerode from 'dockerode';

export class FakeEngine {
  /** Images the engine has; asking for any other is a 404, as the engine's. */
  readonly images: Set<string>;
  /** Every call, in order ("ping", "info", "version", "inspect image x", "dial /_ping"). */
  readonly calls: string[] = [];
  /** The engine as the provider's options take it: asking it for anything else fails the test by name. */
  readonly docker: Dockerode;

  constructor(images: readonly string[] = []) {
    this.images = new Set(images);
    const answers: Record<string, unknown> = {
      ping: async () => {
        this.calls.push('ping');
        return Buffer.from('OK');
      },
      info: async () => {
        this.calls.push('info');
        return { Runtimes: { runc: {} }, DefaultRuntime: 'runc' };
      },
      version: async () => {
        this.calls.push('version');
        return { Version: '27.0.0', Components: [{ Name: 'Engine', Version: '27.0.0' }] };
      },
      // Raw requests (a ping read for its headers): a Docker engine's answer.
      modem: {
        dial: (request: { path: string }, callback: (error: Error | null, response?: NodeJS.ReadableStream) => void) => {
          this.calls.push(`dial ${request.path}`);
          if (request.path !== '/_ping') return callback(new Error(`the fake engine does not answer ${request.path}`));
          const response = Object.assign(new PassThrough(), { headers: { server: 'Docker/27.0.0 (linux)', 'api-version': '1.46' } });
          response.end('OK');
          callback(null, response);
        },
      },
      getImage: (name: string) => ({
        inspect: async () => {
          this.calls.push(`inspect image ${name}`);
          if (this.images.has(name)) return { Id: `sha256:${name}` };
          throw Object.assign(new Error(`No such image: ${name}`), { statusCode: 404 });
        },
      }),
    };
    // Only these calls are faked; the provider takes a Dockerode, so this one stands in for it.
    this.docker = new Proxy(answers, {
      get: (target, key) => {
        if (typeof key === 'string' && key in target) return target[key];
        if (typeof key === 'symbol' || key === 'then') return undefined;
        throw new Error(`the fake engine was asked for ${key}: add it to test/unit/fakes/engine.ts if the provider now needs it`);
      },
    }) as unknown as Dockerode;
  }
}
