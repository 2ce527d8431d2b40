/** Credentials the proxy adds for bound hosts: bindings, stand-ins, and what the proxy is told. */
export { SECRET_NAME, parseBindings, reachableBindings, type CredentialBinding, type CredentialSend, type ParsedBindings, type WrittenBinding } from './bindings';
export { newStandIn, standInsFor, strictPercent, valueProblem, wireBinding, type CredentialValues, type SandboxCredentials, type WireBinding } from './wire';
export { credentialsNote } from './note';
