#!/usr/bin/env bash
# Fails when a top-level folder tracked by git is not named in README.md's Layout table
# (a row starting with | `folder/...), so the table stays the map of the repository.
set -euo pipefail
cd "$(dirname "$0")/.."
missing=()
while IFS= read -r dir; do
  grep -qE "^\| \`${dir//./\\.}/" README.md || missing+=("$dir/")
done < <(git ls-files | awk -F/ 'NF > 1 { print $1 }' | sort -u)
if ((${#missing[@]})); then
  echo "README.md's Layout table does not name these top-level folders: ${missing[*]}" >&2
  exit 1
fi
