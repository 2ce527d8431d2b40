/**
 * An image's listed tag in the form we named it. Podman's Docker-compatible API lists an image
 * built through it under the registry it assumed for a short name (`<registry>/codeact-sandbox/proxy:…`)
 * and one tagged or loaded under `localhost/`; Docker lists the name as given. Our names are
 * compared through this, or on Podman no listed tag is ever one of ours (and a prune that keeps
 * only "ours" removes them all).
 */
// A reference's first part names a registry when it is localhost or has a dot or a colon (the
// reference grammar Docker and Podman share); our repositories' first part has neither.
const REGISTRY = /^(?:localhost|[^/]*[.:][^/]*)\//;

/** A listed tag as we would have written it. */
export function asNamed(listed: string): string {
  return listed.replace(REGISTRY, '');
}

/** The tags of `repoTags` in `repository`, as we name them. */
export function tagsIn(repoTags: readonly string[] | undefined, repository: string): string[] {
  return (repoTags ?? []).map(asNamed).filter((t) => t.startsWith(`${repository}:`));
}
