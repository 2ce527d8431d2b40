/**
 * An image's listed tag in the form we named it. Podman's Docker-compatible API lists an image
 * built through it with the registry it assumed (`docker.io/codeact-sandbox/proxy:…`) and one
 * tagged or loaded with `localhost/`; Docker lists the name as given. Our names are compared
 * through this, or on Podman no listed tag is ever one of ours (and a prune that keeps only
 * "ours" removes them all).
 */
const ASSUMED_REGISTRY = /^(?:docker\.io|localhost)\//;

/** A listed tag as we would have written it. */
export function asNamed(listed: string): string {
  return listed.replace(ASSUMED_REGISTRY, '');
}

/** The tags of `repoTags` in `repository`, as we name them. */
export function tagsIn(repoTags: readonly string[] | undefined, repository: string): string[] {
  return (repoTags ?? []).map(asNamed).filter((t) => t.startsWith(`${repository}:`));
}
