/** One sandbox's life: made from its spec, a program run in it with its files, then removed. */
export { DockerSandbox } from './dockerSandbox';
export { engineSandboxes, type SandboxFactory } from './factory';
export { attachSandbox, createSandbox, createSharedSandbox, type AttachResult, type NewSandbox } from './make';
