#!/usr/bin/env bash
# Writes docs/cli.md, the command-line reference, from kguard's option tables
# (the same tables --help, the man pages and the bash completion come from).
# Never edit docs/cli.md by hand: change the command's table, build, run this.
# The ctest cli.docs fails while the checked-in page differs.
#
# usage: scripts/gen-cli-docs.sh [KGUARD]   (default: build/ci/kguard)
set -euo pipefail
cd "$(dirname "$0")/.."
kguard=${1:-build/ci/kguard}
if [ ! -x "$kguard" ]; then
  echo "gen-cli-docs: $kguard is not built (cmake --preset ci && cmake --build --preset ci)" >&2
  exit 1
fi
"$kguard" help --format=markdown > docs/cli.md.tmp
mv docs/cli.md.tmp docs/cli.md
echo "docs/cli.md"
