/**
 * The sandboxes a process holds: one per chat (or shared by processes), leases and capacity,
 * spares made ahead, idle removal, and cleaning up what a gone process left behind.
 */
export { processIsAlive, removeCliSandboxes, removeOrphanedSandboxes } from './cleanup';
export { DockerSandboxProvider, type ProviderOptions } from './dockerSandboxProvider';
export { HeldSpare } from './heldSpare';
export type { ChatRecords } from './chatImages';
