/** Sources of COPY/ADD instructions that read the build context (not --from=, not URLs, not heredocs). */
export function copySources(dockerfile: string): string[] {
  const logical = dockerfile
    .replace(/\\\r?\n/g, ' ')
    .split(/\r?\n/)
    .map((l) => l.trim())
    .filter((l) => l && !l.startsWith('#'));
  const sources: string[] = [];
  for (const l of logical) {
    const m = /^(COPY|ADD)\s+(.*)$/i.exec(l);
    if (!m) continue;
    let rest = m[2]!.trim();
    let fromStage = false;
    while (rest.startsWith('--')) {
      const flag = /^--(\S+)\s*/.exec(rest)!;
      if (/^from=/i.test(flag[1]!)) fromStage = true;
      rest = rest.slice(flag[0].length);
    }
    if (fromStage) continue;
    let parts: string[];
    if (rest.startsWith('[')) {
      try {
        parts = JSON.parse(rest) as string[];
      } catch {
        continue;
      }
    } else {
      parts = rest.split(/\s+/);
    }
    for (const src of parts.slice(0, -1)) {
      if (src.startsWith('<<') || /^[a-z]+:\/\//i.test(src) || src.startsWith('git@')) continue;
      sources.push(src);
    }
  }
  return sources;
}
