/**
 * What the model is told, with a sandbox's first result, of the credentials its proxy adds: which
 * hosts get one and how, so it calls them without a key instead of asking the person for one or
 * writing one into the code. Names hosts, headers and variables; never a secret's name or value.
 */
import type { CredentialBinding, CredentialSend } from './bindings';

function sent(send: CredentialSend): string {
  switch (send.as) {
    case 'bearer':
      return 'as Authorization: Bearer';
    case 'basic':
      return 'as Authorization: Basic';
    case 'header':
      return `in the ${send.name} header`;
    case 'query':
      return `as the ${send.name} query parameter`;
  }
}

/** "api.example.com (as Authorization: Bearer; paths /v1; methods GET)", the scope a binding has. */
function scope(b: CredentialBinding): string {
  const parts = [sent(b.send)];
  if (b.paths.length) parts.push(`paths ${b.paths.join(', ')}`);
  if (b.methods.length) parts.push(`methods ${b.methods.join(', ')}`);
  if (b.placeholder) parts.push(`a stand-in key in $${b.placeholder}`);
  return `${b.hosts.join(', ')} (${parts.join('; ')})`;
}

export function credentialsNote(bindings: readonly CredentialBinding[]): string | undefined {
  if (bindings.length === 0) return undefined;
  const standIn = bindings.some((b) => b.placeholder)
    ? ' Where a library insists on a key, give it the stand-in from its variable: the proxy swaps it on that host alone.'
    : '';
  return (
    `The proxy adds the user's credentials to HTTPS requests on their way out, for: ${bindings.map(scope).join(', ')}. ` +
    `Call those hosts without a key: the program cannot read the value and needs none.${standIn}`
  );
}
