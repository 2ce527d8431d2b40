#!/usr/bin/env bash
# Prints the Debian archive this machine's apt already uses, so no script names a mirror host.
# Order: $DEBIAN_MIRROR, then deb822 sources (/etc/apt/sources.list.d/*.sources, the
# first of the "URIs:" of a stanza that serves a plain suite, not only -security/-updates), then the classic
# one-line format (/etc/apt/sources.list and sources.list.d/*.list).
# Exits 1 with a sentence on stderr when none is found.
set -euo pipefail
APT_DIR=${CODEACT_APT_DIR:-/etc/apt}

if [ -n "${DEBIAN_MIRROR:-}" ]; then echo "$DEBIAN_MIRROR"; exit 0; fi

from_deb822() { # one file; prints the first URI of a stanza serving the main archive
  awk '
    function flush() {
      plain = 0; n = split(suites, s, /[ \t]+/)
      for (k = 1; k <= n; k++) if (s[k] != "" && s[k] !~ /-(security|updates|backports)$/) plain = 1
      if (uris != "" && types ~ /(^|[ \t])deb([ \t]|$)/ && plain && enabled != "no") {
        split(uris, u, /[ \t]+/); print u[1]; found = 1; exit
      }
      uris = ""; types = ""; suites = ""; enabled = ""
    }
    /^[ \t]*#/ { next }
    /^[ \t]*$/ { flush(); next }
    { key = tolower($1); sub(/:$/, "", key); val = $0; sub(/^[^:]*:[ \t]*/, "", val)
      if (key == "uris") uris = val; else if (key == "types") types = val
      else if (key == "suites") suites = val; else if (key == "enabled") enabled = tolower(val) }
    END { if (!found) flush() }
  ' "$1"
}

from_list() { # one file; "deb [opts] URI suite components"
  awk '
    /^[ \t]*deb[ \t]/ {
      i = 2
      if ($i ~ /^\[/) { while (i <= NF && $i !~ /\]$/) i++; i++ }
      if ($(i+1) !~ /-(security|updates|backports)/) { print $i; exit }
    }
  ' "$1"
}

for f in "$APT_DIR"/sources.list.d/*.sources; do
  [ -f "$f" ] || continue
  m=$(from_deb822 "$f"); [ -n "$m" ] && { echo "${m%/}"; exit 0; }
done
for f in "$APT_DIR"/sources.list "$APT_DIR"/sources.list.d/*.list; do
  [ -f "$f" ] || continue
  m=$(from_list "$f"); [ -n "$m" ] && { echo "${m%/}"; exit 0; }
done
echo "No Debian mirror found in $APT_DIR (sources.list or sources.list.d/*.sources); set DEBIAN_MIRROR to the archive URL to use." >&2
exit 1
